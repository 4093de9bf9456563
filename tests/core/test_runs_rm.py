"""``geak-core runs rm``: which runs it removes, what it asks and what it refuses."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main
from geak_core.engine.agent import Agent, run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.store import RunStore, list_runs, owner_record

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "recipes" / "quickstart.toml"


def _run(runs: Path, name: str, status: str, **meta) -> Path:
    store = RunStore.create(runs, name, "", {})
    store.set_meta("status", status)
    for key, value in meta.items():
        store.set_meta(key, value)
    store.close()
    return store.dir


def _rm(runs: Path, *args: str, answer: str | None = None):
    return CliRunner().invoke(main, ["runs", "rm", *args, "--output-dir", str(runs)], input=answer)


def test_a_run_that_failed_before_its_first_llm_call_is_removed_with_failed(tmp_path, monkeypatch):
    def broken(self, task):
        raise RuntimeError("the judge fell over")

    monkeypatch.setattr(Agent, "skip_reason", broken)  # asked of every task before any LLM call
    plugins = PluginManager()
    recipe = load_recipe(QUICKSTART, plugins, overrides=[f'run.output_dir="{tmp_path / "runs"}"'])
    with pytest.raises(RuntimeError):
        run_recipe(recipe, plugins, echo=lambda line: None)
    (row,) = list_runs(tmp_path / "runs")
    assert row["status"] == "failed" and row["llm_calls"] == 0
    kept = _run(tmp_path / "runs", "finished", "finished")

    result = _rm(tmp_path / "runs", "--failed", "--yes")
    assert result.exit_code == 0, result.output
    assert f"removed {row['run_id']} (" in result.output
    assert [r["run_id"] for r in list_runs(tmp_path / "runs")] == [kept.name]
    assert not (tmp_path / "runs" / row["run_id"]).exists()


def test_named_runs_are_removed_only_when_confirmed(tmp_path):
    runs = tmp_path / "runs"
    one = _run(runs, "one", "finished")
    two = _run(runs, "two", "interrupted")
    declined = _rm(runs, one.name[:-2], str(two), answer="n\n")  # a prefix and a folder
    assert declined.exit_code == 1  # aborted
    assert one.exists() and two.exists()
    assert f"{one.name}  finished" in declined.output and "Remove these 2 runs?" in declined.output
    accepted = _rm(runs, one.name[:-2], str(two), answer="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert not one.exists() and not two.exists()
    assert f"removed {one.name}" in accepted.output and f"removed {two.name}" in accepted.output


def test_a_running_run_is_refused_and_nothing_is_removed(tmp_path):
    runs = tmp_path / "runs"
    done = _run(runs, "done", "failed")
    busy = _run(runs, "busy", "running", owner=owner_record())  # this process: still running
    result = _rm(runs, done.name, busy.name, "--yes")
    assert result.exit_code == 2
    assert f"run {busy.name} is running; stop it first (nothing was removed)" in result.output
    assert done.exists() and busy.exists()
    # selected by age instead, it is kept and said so; the others old enough go
    old = time.time() - 3 * 86400
    for run_dir in (done, busy):
        for path in run_dir.iterdir():
            os.utime(path, (old, old))
    fresh = _run(runs, "fresh", "finished")
    result = _rm(runs, "--older-than", "2", "--yes")
    assert result.exit_code == 0, result.output
    assert f"kept {busy.name}: it is running" in result.output
    assert not done.exists() and busy.exists() and fresh.exists()


def test_nothing_selected_says_how_to_select(tmp_path):
    result = _rm(tmp_path / "runs")
    assert result.exit_code == 2 and "--failed or --older-than DAYS" in result.output
    result = _rm(tmp_path / "runs", "--failed")
    assert result.exit_code == 0 and "no runs to remove" in result.output
