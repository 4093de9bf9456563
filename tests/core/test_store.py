"""The run store: atomic files, append-only SQLite, consistent after a kill."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest
from geak_core.api.model import Candidate, EvalResult
from geak_core.engine.store import RunStore, atomic_write, list_runs, resolve_run


def make_store(tmp_path):
    return RunStore.create(tmp_path, "demo", "[run]\nname = \"demo\"\n", {"gpu": "cpu-interpreter"})


def test_a_new_run_has_its_recipe_manifest_and_database(tmp_path):
    store = make_store(tmp_path)
    assert (store.dir / "recipe.toml").read_text().startswith("[run]")
    assert "cpu-interpreter" in (store.dir / "manifest.json").read_text()
    assert store.meta("status") == "created"
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_candidates_and_evaluations_round_trip(tmp_path):
    store = make_store(tmp_path)
    cand = Candidate("t/L0/I0", "t", "code = 1\n", 0, 0)
    store.record_candidate(cand)
    store.record_evaluation(cand, EvalResult("t", cand.id, call_ok=True, correct=False, reason="mismatch"))
    assert store.candidates("t")[0].code == "code = 1\n"
    assert store.find_evaluation("t", "code = 1\n").reason == "mismatch"
    assert store.find_evaluation("t", "other") is None


def test_llm_calls_are_found_by_slot_and_usage_adds_up(tmp_path):
    store = make_store(tmp_path)
    for i, tokens in enumerate((10, 5)):
        store.record_llm_call(call_id=f"c{i}", key=f"k{i}", call_key=f"slot{i}", backend="x", identity={},
                              request={}, response={"texts": ["hi"]}, error=None, latency_s=0.1,
                              prompt_tokens=tokens, completion_tokens=1)
    store.record_llm_call(call_id="c9", key="k9", call_key="slot9", backend="x", identity={}, request={},
                          response=None, error="boom", latency_s=0.1)
    assert store.find_llm_call("slot1")["id"] == "c1"
    assert store.find_llm_call("slot9") is None  # failed calls are not served on resume
    assert store.usage()["prompt_tokens"] == 15 and store.usage()["calls"] == 2


def test_runs_are_listed_and_resolved_by_prefix(tmp_path):
    store = make_store(tmp_path)
    rows = list_runs(tmp_path)
    assert rows[0]["run_id"] == store.run_id
    assert resolve_run(store.run_id[:17], tmp_path) == store.dir


def test_atomic_write_never_leaves_a_partial_file(tmp_path):
    target = tmp_path / "f.json"
    atomic_write(target, "old")
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_atomic_write_writes_bytes_as_they_are_and_text_as_utf8(tmp_path):
    raw = tmp_path / "sub" / "f.bin"
    atomic_write(raw, b"\x00\xff")
    assert raw.read_bytes() == b"\x00\xff"
    text = tmp_path / "f.txt"
    atomic_write(text, "speedup \u00d7 2\n", fsync=False)
    assert text.read_bytes() == "speedup \u00d7 2\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt", "sub"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_gives_a_new_file_the_mode_the_umask_allows(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        atomic_write(tmp_path / "report.html", "<html></html>")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == mode


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("{}")
    target.chmod(0o640)
    atomic_write(target, '{"a": 1}')
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.read_text() == '{"a": 1}'


def test_a_killed_writer_leaves_a_consistent_store(tmp_path):
    store = make_store(tmp_path)
    run_dir = store.dir
    store.close()
    script = textwrap.dedent(f"""
        import os, sys
        from geak_core.engine.store import RunStore
        from geak_core.api.model import Candidate
        s = RunStore({str(run_dir)!r})
        for i in range(100000):
            s.record_candidate(Candidate(f"c{{i}}", "t", "x" * 100, 0, i))
            if i == 50:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    reopened = RunStore(run_dir)
    assert reopened._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(reopened.candidates("t")) >= 51
