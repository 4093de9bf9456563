"""``bench/rocm_originals.py`` as a real subprocess, in its CPU smoke mode (the interpreter).

The ROCm_v1 folder is synthetic: a correct original of test_add_kernel (our own kernel, plus an
annotated constexpr global that the port rewrites) and an original of test_reverse_range that
reads one element off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from geak_suite_rocm.suite import REFERENCES

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[3] / "bench" / "rocm_originals.py"
SEPARATOR = "#" * 146
WRONG_REVERSE = '''import triton
import triton.language as tl


@triton.jit
def reverse_range(in_ptr, out_ptr):
    x = tl.arange(0, 512)
    tl.store(out_ptr + x, tl.load(in_ptr + (511 - x)))
'''


def run_bench(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    folder = tmp_path / "ROCm_v1"
    folder.mkdir()
    harness = "def test_original():\n    raise AssertionError('never imported')\n"
    add = (REFERENCES / "add_kernel.py").read_text() + "\nSPARE: tl.constexpr = 1\n"
    (folder / "test_add_kernel.py").write_text(add + SEPARATOR + "\n" + harness)
    (folder / "test_reverse_range.py").write_text(WRONG_REVERSE + SEPARATOR + "\n" + harness)
    out = tmp_path / "out.json"
    env = {**os.environ, "GEAK_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--rocm-v1", str(folder), "--tasks",
         "test_add_kernel,test_reverse_range", "--mode", "interpreter", "--seeds", "0",
         "--workers", "2", "--json", str(out), *extra],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, json.loads(out.read_text())


def test_the_smoke_run_records_each_originals_verdict_and_prints_the_table(tmp_path: Path):
    proc, data = run_bench(tmp_path)
    rows = {row["task"]: row for row in data["tasks"]}
    add, reverse = rows["test_add_kernel"], rows["test_reverse_range"]

    assert add["original_judged"]["correct"] and add["original_judged"]["verdict"] == "correct"
    assert add["reference_vs_original"]["correct"]  # our reference, timed against the original
    assert [p["rule"] for p in add["ports"]] == ["constexpr_global"]
    assert add["ported_judged"]["correct"]  # the module timed in place of our reference
    assert reverse["ported_judged"] is None  # nothing ported: the original is what is timed
    assert add["ported_module"].startswith(str(tmp_path / "cache"))

    judged = reverse["original_judged"]
    assert not judged["correct"] and judged["call_ok"]
    assert judged["failed_stage"] == "stage1" and "stage1" in judged["verdict"]
    assert judged["reason"] and judged["mismatches"]

    assert data["environment"]["mode"] == "interpreter"
    assert data["summary"]["original_correct"] == ["test_add_kernel"]
    assert data["summary"]["original_not_correct"] == ["test_reverse_range"]
    assert data["summary"]["not_timed"] == ["test_add_kernel", "test_reverse_range"]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| test_")]
    assert table[0].startswith("| test_add_kernel | correct |")
    assert table[1].startswith("| test_reverse_range | wrong (stage1) |")
    written = (tmp_path / "out.md").read_text()  # kept beside the JSON after every task
    assert all(line in written for line in table)


def test_past_the_time_limit_no_judgement_starts_and_the_tasks_are_listed(tmp_path: Path):
    _, data = run_bench(tmp_path, "--limit-s", "1e-9")
    assert [row["status"] for row in data["tasks"]] == ["not run: time limit"] * 2
    assert set(data["summary"]["not_judged"]) == {"test_add_kernel", "test_reverse_range"}


@pytest.mark.parametrize("later", ["cut_short", "finished"])
def test_merge_keeps_each_tasks_last_finished_row_and_names_its_file(tmp_path, later):
    def run(name, status, ratio):
        row = {"task": "softmax", "status": status, "ports": [], "problem": "" if status == "done" else "cut"}
        if status == "done":
            judged = {"verdict": "correct", "correct": True, "failed_stage": None, "reason": None}
            row.update(original_judged=judged, reference_vs_original=judged, ported_judged=None,
                       ratio_original_as_candidate=ratio, ratio_baseline_option=ratio, ratio=ratio, within=True)
        environment = {"device": "GPU X", "mode": "gpu", "torch": "2", "triton": "3"}
        path = tmp_path / name
        path.write_text(json.dumps({"environment": environment, "tasks": [row]}))
        return str(path)

    first = run("a.json", "done", 0.95)
    second = run("b.json", "not run: time limit" if later == "cut_short" else "done", 1.01)
    paths = [first, second]
    out = tmp_path / "merged.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--merge", *paths, "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    expected = ("0.950", "a.json") if later == "cut_short" else ("1.010", "b.json")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("| softmax |"))
    assert expected[0] in line and line.endswith(f"| {expected[1]} |")
    assert json.loads(out.read_text())["summary"]["within"] == ["softmax"]


def test_merge_takes_a_later_row_cut_short_over_an_earlier_one_and_shows_the_originals_verdict(tmp_path):
    environment = {"device": "GPU X", "mode": "gpu", "torch": "2", "triton": "3"}
    judged = {"verdict": "correct", "correct": True, "failed_stage": None, "reason": None, "speedup": 1.015}
    rows = [{"task": "moe_gemm", "status": "judging", "ports": [], "problem": "", "original_judged": None},
            {"task": "moe_gemm", "status": "judging", "ports": [], "problem": "", "original_judged": judged}]
    paths = []
    for name, row in zip(("k.json", "q.json"), rows, strict=True):
        (tmp_path / name).write_text(json.dumps({"environment": environment, "tasks": [row]}))
        paths.append(str(tmp_path / name))
    proc = subprocess.run([sys.executable, str(BENCH), "--merge", *paths], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("| moe_gemm |"))
    assert line.startswith("| moe_gemm | correct | - | - | 1.015 | not finished |") and line.endswith("| q.json |")


def test_with_judgements_baseline_only_our_reference_is_timed_against_the_original(tmp_path: Path):
    proc, data = run_bench(tmp_path, "--judgements", "baseline")
    rows = {row["task"]: row for row in data["tasks"]}
    add = rows["test_add_kernel"]
    assert add["status"] == "done" and add["judgements"] == "baseline"
    assert add["original_judged"] is None and add["ported_judged"] is None
    assert add["reference_vs_original"]["correct"]
    assert data["summary"]["original_correct"] == [] and data["summary"]["original_not_correct"] == []
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("| test_add_kernel |"))
    assert line.startswith("| test_add_kernel | not judged | - |")
