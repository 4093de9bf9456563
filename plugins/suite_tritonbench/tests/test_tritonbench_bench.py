"""bench/tritonbench_published.py end to end on our fixture data, under the interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tritonbench_paths import DATA, LISTED_ONLY, UNUSABLE, USABLE

pytest.importorskip("geak_evaluator_triton.evaluator")
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "tritonbench_published.py"


def _label(name: str) -> str:
    entries = json.loads((DATA / "TritonBench_G_v1.json").read_text())
    return next(e["output"] for e in entries if e["file"] == name)


def _records(tmp_path: Path) -> Path:
    """A published-style output file: instruction, label (the reference code), predict."""
    def reply(code: str) -> str:
        return f"Here is the kernel.\n```python\n{code}```\n"

    add = _label("add_vectors.py")
    records = [
        # correct, and relies on the test part's `import torch` as a published reply may
        {"instruction": "Add two vectors.", "label": add,
         "predict": reply(add.replace("import torch\n", "", 1))},
        {"instruction": "ReLU.", "label": _label("relu_kernel.py"),
         "predict": reply(_label("relu_kernel.py").replace("tl.maximum", "tl.minimum"))},
        {"instruction": "Scale.", "label": _label("scale_check.py"),
         "predict": "I cannot write this kernel."},
        {"instruction": "A broken task.", "label": _label("bad_syntax.py"), "predict": reply("x = 1\n")},
    ]
    path = tmp_path / "output_fixture_comp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _bench(records: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--data", str(DATA), "--records", str(records),
         "--out", str(out), "--mode", "interpreter", "--workers", "2", *extra],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def _results(out: Path) -> dict[int, dict]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {r["line"]: r for r in map(json.loads, lines)}


def test_the_bench_judges_a_published_output_file_and_resumes_where_it_stopped(tmp_path):
    records, out = _records(tmp_path), tmp_path / "out"
    first = _bench(records, out)
    results = _results(out)
    assert [results[n]["task"] for n in (1, 2, 3, 4)] == [
        "add_vectors", "relu_kernel", "scale_check", "bad_syntax"]
    assert results[1]["correct"] and results[1]["mode"] == "interpreter"
    assert results[2]["call_ok"] and not results[2]["correct"]
    assert results[3]["failed_stage"] == "extract"
    assert "unusable_task" in results[4]["flags"] and not results[4]["call_ok"]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["wall_s"] > 0  # the run's own seconds, for the bench's time figure
    tasks = len(USABLE | UNUSABLE | LISTED_ONLY)
    assert (summary["tasks"], summary["call_ok"], summary["correct"]) == (tasks, 2, 1)
    assert summary["call_accuracy"] == pytest.approx(2 / tasks)
    assert summary["unusable_task"] == 1 and summary["speedups_measured"] == 0
    assert f"call accuracy {100 * 2 / tasks:.2f}%" in first.stdout

    again = _bench(records, out)
    assert len((out / "results.jsonl").read_text().splitlines()) == 4
    assert json.loads((out / "summary.json").read_text())["run"]["already_judged"] == 4
    assert f"execution accuracy {100 / tasks:.2f}%" in again.stdout


def test_after_the_time_limit_no_record_starts_and_the_next_run_finishes_them(tmp_path):
    records, out = _records(tmp_path), tmp_path / "out"
    _bench(records, out, "--limit-s", "0.001")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["not_started"] == 2 and sorted(_results(out)) == [3, 4]
    (out / "results.jsonl").write_text((out / "results.jsonl").read_text() + '{"cut sho')
    _bench(records, out)
    assert sorted(_results(out)) == [1, 2, 3, 4]


def test_results_of_another_protocol_are_not_mixed_in(tmp_path):
    records, out = _records(tmp_path), tmp_path / "out"
    _bench(records, out, "--limit-s", "0.001")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--data", str(DATA), "--records", str(records),
         "--out", str(out), "--protocol", "strict", "--mode", "interpreter"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 2 and "choose another --out" in done.stderr
