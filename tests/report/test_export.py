"""geak-core export: one row per candidate and the transitions, loadable with datasets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main
from geak_core.reporting.export import (
    CANDIDATE_COLUMNS,
    CATEGORY_COLUMNS,
    LEVEL_COLUMNS,
    PROFILE_COLUMNS,
    TRANSITION_COLUMNS,
    transition_kind,
)

from tests.report.timed_run import EAGER_OVER_REFERENCE

ROOT = Path(__file__).resolve().parents[2]


def _export(run, tmp_path, fmt):
    out = tmp_path / f"export-{fmt}"
    result = CliRunner().invoke(main, ["export", str(run), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_quickstart_exports_each_candidate_with_its_prompt_reply_and_verdict(quickstart_run, tmp_path):
    out = _export(quickstart_run, tmp_path, "jsonl")
    rows = {r["candidate_id"]: r for r in _jsonl(out / "candidates.jsonl")}
    assert len(rows) == 6
    assert all(list(r) == [c.name for c in CANDIDATE_COLUMNS] for r in rows.values())
    first = rows["test_add_kernel/L0/I0"]
    assert first["round_kind"] == "generate" and first["verdict"] == "failed"
    assert first["failed_stage"] == "run" and "arange" in first["reason"]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert "## Task `test_add_kernel`" in first["prompt"][1]["content"]
    assert first["code"] and first["code"] in first["reply"].replace("\r\n", "\n")
    assert first["mode"] == "interpreter" and first["speedup"] is None and first["hardware"] is None
    fix = rows["test_add_kernel/L0/I1"]
    assert fix["round_kind"] == "reflect" and fix["verdict"] == "correct"
    assert fix["parent_id"] == "test_add_kernel/L0/I0" and fix["maintainability_index"] > 0
    assert rows["softmax/L0/I0"]["verdict"] == "wrong" and rows["softmax/L0/I0"]["failed_stage"] == "stage2"


def test_the_quickstart_yields_two_error_to_fix_pairs_and_no_speed_pairs(quickstart_run, tmp_path):
    out = _export(quickstart_run, tmp_path, "jsonl")
    pairs = _jsonl(out / "transitions.jsonl")
    assert sorted((p["task"], p["kind"], p["before_id"], p["after_id"]) for p in pairs) == [
        ("softmax", "error_to_fix", "softmax/L0/I0", "softmax/L0/I1"),
        ("test_add_kernel", "error_to_fix", "test_add_kernel/L0/I0", "test_add_kernel/L0/I1"),
    ]
    fix = next(p for p in pairs if p["task"] == "softmax")
    assert "## What the judge reported" in fix["prompt"][-1]["content"]  # the fix was asked with the report
    assert fix["before_failed_stage"] == "stage2" and fix["after_verdict"] == "correct"


def test_a_timed_run_yields_slow_to_fast_pairs_and_its_hardware(timed_runs, tmp_path):
    out = _export(timed_runs[0], tmp_path, "jsonl")
    pairs = _jsonl(out / "transitions.jsonl")
    kinds = [p["kind"] for p in pairs]
    assert kinds.count("error_to_fix") == 4 and kinds.count("slow_to_fast") == 4  # 2 tasks x 2 lineages
    for p in pairs:
        if p["kind"] == "slow_to_fast":
            assert p["after_speedup"] > p["before_speedup"] and p["round_kind"] == "optimize"
    rows = _jsonl(out / "candidates.jsonl")
    timed = [r for r in rows if r["verdict"] == "correct"]
    assert {r["hardware"] for r in timed} == {"h100"} and all(r["roofline_fraction"] for r in timed)
    assert sum(r["prompt_tokens"] for r in rows) == 2 * 2 * (100 + 101 + 102)
    # vector_add has a PyTorch eager equivalent (1.5x the reference's latency), matmul none
    for r in timed:
        expected = EAGER_OVER_REFERENCE * r["speedup_sum"] if r["task"] == "vector_add" else None
        assert r["speedup_vs_eager"] == (pytest.approx(expected) if expected else None), r["candidate_id"]
    for p in pairs:  # a transition copies the fields of its two candidates' rows
        after = next(r for r in rows if r["candidate_id"] == p["after_id"])
        before = next(r for r in rows if r["candidate_id"] == p["before_id"])
        assert (p["task"], p["reply"], p["after_code"], p["model"]) == (after["task"], after["reply"],
                                                                         after["code"], after["model"])
        assert (p["before_code"], p["before_error"]) == (before["code"], before["error"])


def test_the_parquet_export_carries_the_documented_types(timed_runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = _export(timed_runs[0], tmp_path, "parquet")
    table = pq.read_table(out / "candidates.parquet")
    assert table.num_rows == 12 and table.column_names == [c.name for c in CANDIDATE_COLUMNS]
    assert str(table.schema.field("speedup").type) == "double"
    pa = pytest.importorskip("pyarrow")
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    assert table.schema.field("prompt").type.value_type == message
    pairs = pq.read_table(out / "transitions.parquet")
    assert pairs.column_names == [c.name for c in TRANSITION_COLUMNS] and pairs.num_rows == 8


def test_both_formats_load_with_datasets(quickstart_run, timed_runs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    cache = str(tmp_path / "cache")
    jsonl = _export(quickstart_run, tmp_path, "jsonl")
    parquet = _export(timed_runs[0], tmp_path, "parquet")
    candidates = datasets.load_dataset("json", data_files=str(jsonl / "candidates.jsonl"), split="train",
                                       cache_dir=cache)
    assert candidates.num_rows == 6 and candidates.column_names == [c.name for c in CANDIDATE_COLUMNS]
    assert candidates.filter(lambda r: r["verdict"] == "correct").num_rows == 4
    pairs = datasets.load_dataset("json", data_files=str(jsonl / "transitions.jsonl"), split="train",
                                  cache_dir=cache)
    assert set(pairs["kind"]) == {"error_to_fix"}
    timed = datasets.load_dataset("parquet", data_files=str(parquet / "transitions.parquet"),
                                  split="train", cache_dir=cache)
    assert sorted(set(timed["kind"])) == ["error_to_fix", "slow_to_fast"]
    assert timed[0]["prompt"][0]["role"] == "system" and timed.features["after_speedup"].dtype == "float64"


def test_a_step_is_a_transition_only_when_it_fixes_or_speeds_up():
    def row(verdict, speedup=None):
        return {"verdict": verdict, "speedup": speedup}

    assert transition_kind(row("failed"), row("correct")) == "error_to_fix"
    assert transition_kind(row("wrong"), row("correct")) == "error_to_fix"
    assert transition_kind(row("correct", 1.0), row("correct", 1.2)) == "slow_to_fast"
    assert transition_kind(row("correct", 1.2), row("correct", 1.0)) is None
    assert transition_kind(row("correct"), row("correct")) is None  # untimed: no speed claim
    assert transition_kind(row("correct", 1.0), row("wrong")) is None


def test_the_documented_schema_is_the_exported_one():
    doc = ROOT.joinpath("docs", "export.md").read_text()
    for title, columns in (("candidates", CANDIDATE_COLUMNS), ("transitions", TRANSITION_COLUMNS),
                           ("categories", CATEGORY_COLUMNS), ("levels", LEVEL_COLUMNS),
                           ("profiles", PROFILE_COLUMNS)):
        table = doc.split(f"### {title}\n", 1)[1].split("\n#", 1)[0]
        assert re.findall(r"^\| `(\w+)` \|", table, re.M) == [c.name for c in columns]


def test_an_unknown_format_is_refused(timed_runs):
    result = CliRunner().invoke(main, ["export", str(timed_runs[0]), "--format", "csv"])
    assert result.exit_code == 2 and "csv" in result.output
