"""bench/kernelbenchx_references.py end to end on our fixture checkout, under the interpreter,
and its per-category table."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kernelbenchx_paths import ROOT

pytest.importorskip("geak_evaluator_triton.evaluator")

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "kernelbenchx_references.py"


def _bench():
    from geak_evaluator_triton.child_jobs import import_file

    return import_file("kernelbenchx_references", str(SCRIPT))


def _run(out: Path, tasks: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--data", str(ROOT), "--tasks", tasks, "--json", str(out),
         "--mode", "interpreter", "--workers", "2", "--timeout", "120", *extra],
        capture_output=True, text=True, env=env, timeout=600,
    )


@pytest.mark.slow
def test_references_judged_against_themselves_resumably(tmp_path):
    out = tmp_path / "kbx.json"
    first = _run(out, "softsign,scaled_sum")
    assert first.returncode == 0, first.stderr[-3000:]
    data = json.loads(out.read_text())
    rows = {row["task"]: row for row in data["tasks"]}
    assert set(rows) == {"softsign", "scaled_sum"}
    assert all(row["correct"] and row["call_ok"] for row in rows.values()), rows
    assert rows["softsign"]["two_stages"] and not rows["scaled_sum"]["two_stages"]
    assert any("stage 2" in json.dumps(s) or "outlier" in json.dumps(s)
               for s in rows["scaled_sum"]["skipped"])
    assert data["environment"]["mode"] == "interpreter"
    assert "| Activation | 1 | 1 | 1 |" in first.stdout
    # a judge error is no verdict: as if scaled_sum had ended in one, it is judged again
    # when asked
    for row in data["tasks"]:
        if row["task"] == "scaled_sum":
            row.update(correct=False, flags=["judge_error"], reason="judge error: killed")
    out.write_text(json.dumps(data))
    # run again with one more task: only that one and the judge error are judged
    second = _run(out, "softsign,scaled_sum,mul_w8a8", "--retry-errors")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 task(s) already judged, 2 to judge" in second.stderr
    rows = {row["task"]: row for row in json.loads(out.read_text())["tasks"]}
    assert set(rows) == {"softsign", "scaled_sum", "mul_w8a8"} and rows["mul_w8a8"]["correct"]
    assert rows["scaled_sum"]["correct"] and len(json.loads(out.read_text())["tasks"]) == 3
    table = subprocess.run([sys.executable, str(SCRIPT), "--table", str(out)],
                           capture_output=True, text=True, timeout=60)
    assert "| Quantization | 1 | 1 | 1 |" in table.stdout and "| **all** | 3 | 3 | 2 |" in table.stdout
    # the same file judged with another judge option is refused, not mixed
    third = _run(out, "softsign", "--evaluator-option", "pin_timing_cpus=false")
    assert third.returncode == 2 and "use another file" in third.stderr, third.stderr[-2000:]


def test_evaluator_options_are_read_as_toml_values_and_an_unknown_key_is_refused():
    from geak_evaluator_triton.options import option_flags

    flag = "--evaluator-option"
    assert option_flags(["pin_timing_cpus=false", "rep_ms = 50.0", "speedup_method=mean"], flag) == {
        "pin_timing_cpus": False, "rep_ms": 50.0, "speedup_method": "mean"}
    with pytest.raises(SystemExit, match="--evaluator-option 'pin_cpus=false'"):
        option_flags(["pin_cpus=false"], flag)
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        option_flags(["pin_timing_cpus"], flag)
    bad = subprocess.run([sys.executable, str(SCRIPT), "--data", "x", "--evaluator-option", "pin_cpus=1"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "pin_cpus" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr[-2000:]
    nowhere = subprocess.run([sys.executable, str(SCRIPT), "--data", "no/such/folder"],
                             capture_output=True, text=True, timeout=120)
    assert nowhere.returncode == 2 and "is not a folder" in nowhere.stderr, nowhere.stderr[-2000:]
    assert "Traceback" not in nowhere.stderr


def test_the_self_candidate_keeps_the_reference_and_adds_a_kernel(make_suite, tmp_path):
    bench = _bench()
    task = make_suite().get("mul_w8a8")
    code = bench.self_candidate(task)
    assert "return input * weight" in code and "@_kbx_triton.jit" in code
    assert code.rstrip().endswith("mul_w8a8 = _kbx_with_kernel(mul_w8a8)")
    judged = bench.bench_task_of(task, str(tmp_path))
    assert not judged.forbid_torch_compute and judged.extra["quantization"]["check"] is False
    # both sides of the timing pay for the shim's launch: the baseline is the same code
    assert Path(judged.timing_baseline).read_text(encoding="utf-8") == code
    assert not task.timing_baseline
    assert task.forbid_torch_compute and task.extra["quantization"]["check"] is True


def test_the_category_table_from_a_gpu_run():
    bench = _bench()
    shape = {"case": "perf_0", "reference_ms": 0.01, "candidate_ms": 0.011, "speedup": 0.91,
             "roofline_fraction": 0.25,
             "published": {"machine": "h800", "ms": 0.008, "measured_over_published": 1.25}}
    data = {
        "environment": {"device": "NVIDIA H800", "mode": "gpu", "torch": "2.11", "triton": "3.6",
                        "published_machine": "h800"},
        "tasks": [
            {"task": "relu", "category": "Activation", "correct": True, "two_stages": True,
             "flags": [], "speedup": 0.95, "shapes": [shape, dict(shape, reference_ms=0.03)]},
            {"task": "rand", "category": "Random", "correct": False, "two_stages": False,
             "flags": ["judge_error"], "reason": "the reference failed", "speedup": None,
             "shapes": []},
        ],
    }
    table = bench.category_table(data)
    assert "published timings matched: h800" in table
    assert "| Activation | 1 | 1 | 1 | 0 | 0 | 2 | 0.950 | 0.0200 | 25.0% | 1.25 |" in table
    assert "| Random | 1 | 0 | 0 | 0 | 1 | 0 | - | - | - | - |" in table
    assert "| **all** | 2 | 1 | 1 | 0 | 1 | 2 |" in table
    assert "* Random/rand: the reference failed" in table


def test_tasks_wait_for_host_memory_and_the_first_always_runs():
    from types import SimpleNamespace

    bench = _bench()
    cases = [SimpleNamespace(bytes=4e9, timed=True), SimpleNamespace(bytes=1e9, timed=False),
             SimpleNamespace(bytes=None, timed=True)]
    assert bench.host_bytes(cases) == bench.HOST_COPIES * 4e9
    queue = [SimpleNamespace(id=n) for n in ("huge", "small", "medium")]
    need = {"huge": 100e9, "small": 1e9, "medium": 10e9}
    assert bench.next_fitting(queue, need, 0.0, 64e9, running=0) == 0  # alone, whatever it needs
    assert bench.next_fitting(queue, need, 50e9, 64e9, running=2) == 1  # the huge one waits
    assert bench.next_fitting(queue, need, 63.5e9, 64e9, running=3) is None
    assert bench.next_fitting(queue, need, 63.5e9, 0.0, running=3) == 0  # no budget: no limit


def test_shards_merge_into_one_table_listing_the_untimed_and_the_drifting(tmp_path):
    bench = _bench()

    def row(task, speedup, **extra):
        return {"task": task, "category": "Math", "correct": True, "flags": extra.pop("flags", []),
                "speedup": speedup, "shapes": [], "two_stages": True, **extra}

    first = {"environment": {"device": "GPU X", "mode": "gpu"},
             "tasks": [row("abs", 1.004), row("adam", None, performance_note="the reference could not be timed")]}
    second = {"environment": {"device": "GPU X", "mode": "gpu"},
              "tasks": [row("avg", 0.062, flags=["late_calls"]), row("abs", 0.990)]}
    paths = []
    for number, data in enumerate((first, second)):
        path = tmp_path / f"kbx-{number}.json"
        path.write_text(json.dumps(data))
        paths.append(str(path))
    merged = bench.merged(paths)
    assert sorted(r["task"] for r in merged["tasks"]) == ["abs", "adam", "avg"]
    assert {r["task"]: r["speedup"] for r in merged["tasks"]}["abs"] == 0.990  # the later file's row
    table = bench.category_table(merged)
    assert "| Math | 3 | 3 |" in table
    assert "* Math/adam: the reference could not be timed" in table
    assert "* Math/avg: 0.062 (late_calls)" in table and "Math/abs: 0.990" not in table
    assert "Timed more than once: 1 tasks, 2 self-speedups; outside 1.00 +- 0.03 in at least one of them: 0." in table
    # a task within in the row kept but outside in an earlier file is still named, with every value
    third = tmp_path / "kbx-2.json"
    third.write_text(json.dumps({"environment": {}, "tasks": [row("abs", 1.010), row("avg", 0.995)]}))
    again = bench.merged([paths[1], paths[0], str(third)])
    assert again["judgements"]["abs"] == [("kbx-1.json", 0.990, None), ("kbx-0.json", 1.004, None),
                                          ("kbx-2.json", 1.010, None)]
    table = bench.category_table(again)
    assert "Self-speedups outside" not in table  # the rows kept are all within
    assert "Timed more than once: 2 tasks, 5 self-speedups; outside 1.00 +- 0.03 in at least one of them: 1" in table
    assert "* Math/avg: 0.062, 0.995" in table and "* Math/abs" not in table


def test_a_self_speedups_interval_comes_from_its_cases_medians():
    import math

    bench = _bench()
    row = {"task": "t", "category": "Math", "correct": True, "speedup": 1.05, "flags": [],
           "shapes": [{"speedup": 1.0, "interval": 0.01}, {"speedup": 1.1, "interval": 0.02}, {"speedup": None}]}
    half = bench.speedup_interval(row)
    assert half == pytest.approx(math.sqrt((math.sqrt(2) * 0.01) ** 2 + (1.1 * math.sqrt(2) * 0.02) ** 2) / 2)
    assert bench.speedup_interval({"shapes": [{"speedup": 1.0, "interval": None}]}) is None
    table = bench.category_table({"environment": {}, "tasks": [row]})
    assert f"* Math/t: 1.050 (+- {half:.3f})" in table
    assert "95 % interval holds 1.00: 0 of 1" in table


def test_repeated_judgements_are_measured_against_their_own_intervals(tmp_path):
    """``--table`` over files that judged the same tasks: how far the self-speedups lie from
    1.00 in the sd each one's interval implies, and per task outside 0.03 in any file, its rms
    distance from 1.00 against the sd its intervals imply and how many judgements averaged
    would hold it within 0.03 ((rms x 2.576 / 0.03)^2)."""
    bench = _bench()

    def row(task, speedup, interval):  # one case: the task's half-width is sqrt(2) * interval * speedup
        return {"task": task, "category": "Fusion", "correct": True, "flags": [], "speedup": speedup,
                "two_stages": True, "shapes": [{"speedup": speedup, "interval": interval}]}

    runs = [[row("wide", 1.04, 0.03), row("tight", 1.001, 0.001)],
            [row("wide", 0.97, 0.03), row("tight", 0.999, 0.001)],
            [row("wide", 1.00, 0.03), row("tight", 1.010, 0.001)]]
    paths = []
    for number, tasks in enumerate(runs):
        path = tmp_path / f"lane-{number}.json"
        path.write_text(json.dumps({"environment": {}, "tasks": tasks}))
        paths.append(str(path))
    data = bench.merged(paths)
    half = {name: [j[2] for j in data["judgements"][name]] for name in ("wide", "tight")}
    assert half["wide"][0] == pytest.approx(1.04 * math.sqrt(2) * 0.03)
    judged = [(speedup, h) for found in data["judgements"].values() for _, speedup, h in found]
    units = [(speedup - 1.0) / (h / 1.96) for speedup, h in judged]
    rms = math.sqrt(sum(u * u for u in units) / len(units))
    outside = sum(1 for speedup, h in judged if abs(speedup - 1.0) > h)
    assert outside == 1  # tight's 1.010, outside its +- 0.0014; wide's all inside theirs (+- 0.04)
    table = bench.category_table(data)
    assert (f"Their distance from 1.00 in the sd each one's own interval implies: rms {rms:.2f} over 6 "
            f"(1.00 if the intervals are right); outside their own 95 % interval: {outside}.") in table
    between = math.sqrt((0.04 ** 2 + 0.03 ** 2 + 0.0) / 3)
    implied = math.sqrt(sum((h / 1.96) ** 2 for h in half["wide"]) / 3)
    # and how many independent judgements averaged would hold it within 0.03 99 % of the time
    needed = (between * 2.576 / 0.03) ** 2
    assert bench.judgements_needed(between) == pytest.approx(needed)
    assert bench.judgements_needed(0.0) == 1.0  # never fewer than the one judgement
    assert (f"* Fusion/wide: 1.040, 0.970, 1.000 (rms distance from 1.00 {between:.3f}; "
            f"their intervals imply {implied:.3f}; {needed:.1f} judgements averaged would hold it "
            "within 0.03 99 % of the time)") in table
    assert "Fusion/tight" not in table.split("Timed more than once")[1]  # within 0.03 in every file
    # a task with fewer than three judgements, or one without an interval, gets no such figures
    assert bench.between_and_implied([(1.04, 0.05), (0.97, 0.05)]) is None
    assert bench.between_and_implied([(1.04, 0.05), (0.97, 0.05), (1.0, None)]) is None
    assert bench.spread([(1.04, None)]) == ""


def test_a_task_killed_beside_others_is_judged_again_alone_and_once():
    import threading
    import time
    from types import SimpleNamespace

    bench = _bench()
    tasks = [SimpleNamespace(id=name, category="Fusion") for name in ("big", "b", "c", "alone_killed")]
    calls: dict[str, int] = {}
    running: list[str] = []
    beside: dict[tuple[str, int], list[str]] = {}
    lock = threading.Lock()

    def judge(task):
        with lock:
            calls[task.id] = calls.get(task.id, 0) + 1
            beside[(task.id, calls[task.id])] = [t for t in running if t != task.id]
            running.append(task.id)
        time.sleep(0.05)
        killed = (task.id == "big" and calls[task.id] == 1) or task.id == "alone_killed"
        with lock:  # and those that started meanwhile
            beside[(task.id, calls[task.id])] += [t for t in running if t != task.id]
            running.remove(task.id)
        reason = "the reference did not finish: killed by SIGKILL (often: out of host memory)" if killed else None
        return task, SimpleNamespace(reason=reason), 0.05

    recorded = []
    need = {"big": 10.0, "b": 1.0, "c": 1.0, "alone_killed": 100.0}
    left = bench.judge_all(list(tasks), need, 50.0, 2, math.inf, judge,
                           lambda task, result, wall: recorded.append((task.id, result.reason)))
    assert left == []
    assert calls == {"big": 2, "b": 1, "c": 1, "alone_killed": 1}
    assert beside[("big", 1)] and beside[("big", 2)] == []  # crowded first, alone the second time
    assert beside[("alone_killed", 1)] == []  # needed more than the budget: ran alone, not retried
    reasons = dict(recorded)
    assert len(recorded) == 4 and reasons["big"] is None and reasons["b"] is None and reasons["c"] is None
    assert "killed by SIGKILL" in reasons["alone_killed"]  # recorded as it ended
    # no task starts after the deadline
    assert bench.judge_all(list(tasks), need, 50.0, 2, 0.0, judge, lambda *a: None) == tasks
