"""What one verdict costs: this judge against GEAK-eval's harness, side by side in one run.

Per task of the rocm suite:

* the candidate is the original expert kernel of the task (the kernel part of
  ``<geak-eval>/geak_eval/data/ROCm/data/ROCm_v1/<task>.py``, everything before
  its line of 146 ``#``) when ``--geak-eval`` names a checkout, else our own
  reference file;
* **cold**: a fresh judge judges it once (reference run, candidate run, timing;
  Triton's disk cache as earlier tasks of the call left it); per-phase seconds;
* **warm**: the same judge judges a second copy (reference cached; the copy's
  kernels are in Triton's compile and autotuning caches, as GEAK-eval's
  candidate is in its compile cache after its reference run of the same file);
* **8 at once**: ``--parallel`` (8) further copies through ``evaluate_many``,
  wall seconds for all of them, and that against one warm judgement;
* **8 at once, cold**: with ``--cold-parallel``, a second fresh judge judges
  ``--parallel`` copies at once, against the cold judgement of one. With
  ``--distinct`` they are distinct copies (below), so each compiles as the cold one
  did; without it Triton's disk cache holds their kernels, which flatters them;
* **8 distinct at once**, with ``--distinct``: copies whose Triton kernels differ (a
  comment line inside each kernel's body changes its source hash), so each compiles
  and autotunes, as the candidates of an agent's batch do: one such copy judged by
  the warm judge (reference cached, its kernels not), then ``--parallel`` of them at
  once, and the ratio of the two;
* **settled** (``--settle``, on by default): before the warm judgement of one, and
  before the ``--parallel`` at once, the bench waits until the judge has every slot's
  spare child up (``TritonEvaluator.settle``: each verdict takes one and starts its
  replacement; on an H100 host the bench waited up to 4.6 s), so one and eight start
  from the same idle judge; the seconds waited are in ``settle_s``. With ``--no-settle`` each starts
  right after the previous verdict, and the last of eight waits for a spare still starting;
* **timing quality**: ``--self`` (3) judgements of our reference against itself
  (ideally 1.00); the spread of the candidate's speedups over ``--repeats`` (5)
  judgements one after another (the warm one and the next ones), and over its
  warm and parallel judgements;
* **GEAK-eval per candidate**, with ``--geak-eval``: its pytest harness on the
  same file, as GEAK-eval judges a candidate: the correctness tests of the
  reference file, those of the candidate file (here the same file) and its
  performance tests, each a fresh ``python -m pytest`` process, wall seconds.

Before the first task (``--prime``, on by default) one throwaway process imports what
either harness loads (torch, Triton, pytest, torch._dynamo) and runs a one-line Triton
kernel: the machine's first use of them (its disk cache cold, Triton's driver helpers not
yet built with the C compiler) is not any candidate's cost, and GEAK-eval's figures are
taken on a machine past it too (on a fresh H100 host the first verdict's reference child
took 10.4-10.6 s to start without it, 3.6 s after it).

Writes ``--json`` (atomically) after every measurement, so a call cut short keeps what it
measured (a row is ``complete`` once all of its are in), and prints a markdown table.

    python bench/judge_cost.py --tasks test_add_kernel,softmax --geak-eval ~/GEAK-eval --json cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

SEPARATOR = "#" * 146
DEFAULT_TASKS = ("test_add_kernel,softmax,layernorm,rmsnorm_fwd,test_gemm_no_scf,test_flashattention_fwd")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated rocm task ids")
    parser.add_argument("--geak-eval", default="", help="a checkout of AMD-AGI/GEAK-eval")
    parser.add_argument("--harness-tasks", default="",
                        help="run GEAK-eval's harness for these tasks only (default: every task; the "
                             "others still take GEAK-eval's kernel as the candidate)")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--self", dest="self_repeats", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5,
                        help="warm judgements one after another whose speedups give the repeat spread")
    parser.add_argument("--cold-parallel", action="store_true",
                        help="also judge --parallel copies at once in a fresh judge (cold)")
    parser.add_argument("--distinct", action="store_true",
                        help="also judge one, then --parallel, copies whose kernels differ (each compiles)")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--geak-timeout", type=float, default=600.0)
    parser.add_argument("--json", dest="json_out", default="")
    parser.add_argument("--prime", action=argparse.BooleanOptionalAction, default=True,
                        help="load torch, Triton, pytest and torch._dynamo and run one kernel in a throwaway "
                             "process before measuring")
    parser.add_argument("--settle", action=argparse.BooleanOptionalAction, default=True,
                        help="before each warm measurement of one and of --parallel, wait until the judge "
                             "has every slot's spare child up (a verdict's own is replaced after it); off: "
                             "right after the previous verdict")
    parser.add_argument("--option", dest="options", action="append", default=[], metavar="KEY=VALUE",
                        help="a triton evaluator option, VALUE in TOML syntax (repeatable), e.g. "
                             "--option runs_per_gpu=4 --option 'spare_children=\"off\"'")
    return parser.parse_args(argv)


def distinct_variant(code: str, index: int) -> str:
    """``code`` with a comment line inside the body of each decorated function (Triton's
    kernels, their autotune and heuristics wrappers included): the kernels' sources, and
    so their compile and autotuning cache keys, differ from those of every other index."""
    import ast

    lines = code.splitlines(keepends=True)
    inserts: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef) and node.decorator_list and node.body[0].lineno > node.lineno:
            first = node.body[0]
            text = lines[first.lineno - 1]
            indent = text[: len(text) - len(text.lstrip())]
            inserts.append((first.lineno - 1, f"{indent}# variant {index}\n"))
    for line, text in sorted(inserts, reverse=True):
        lines.insert(line, text)
    return "".join(lines)


def original_kernel(geak_eval: str, task_id: str) -> str | None:
    path = os.path.join(geak_eval, "geak_eval", "data", "ROCm", "data", "ROCm_v1", f"{task_id}.py")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == SEPARATOR:
            return "".join(lines[:index])
    return None


PRIMER = """
import torch, triton, triton.language as tl
import pytest, torch._dynamo  # GEAK-eval's harness runs under pytest; this judge's guards load dynamo

@triton.jit
def _first_use(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.zeros(1000, device=device)
_first_use[(4,)](x, 1000, BLOCK=256)
assert float(x.sum()) == 1000.0
"""


def prime(mode: str) -> dict[str, Any]:
    """One throwaway process running ``PRIMER`` (``--prime``): seconds, whether it ran."""
    import tempfile

    env = dict(os.environ)
    if mode == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    started = time.monotonic()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:  # a file: @triton.jit reads its kernel's source
        script = os.path.join(folder, "first_use.py")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(PRIMER)
        try:
            proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=600)
            out["ok"] = proc.returncode == 0
            if not out["ok"]:
                out["error"] = proc.stderr[-2000:]
        except subprocess.TimeoutExpired:
            out["ok"] = False
    out["s"] = round(time.monotonic() - started, 2)
    return out


def geak_eval_cost(geak_eval: str, task_id: str, timeout: float) -> dict[str, Any]:
    """Wall seconds of GEAK-eval's three pytest runs for one candidate of ``task_id``."""
    folder = os.path.join(geak_eval, "geak_eval", "data", "ROCm", "data", "ROCm_v1")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(geak_eval) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    steps = {
        "reference_correctness": ["-k", "not test_performance and not test_save_performance_results"],
        "candidate_correctness": ["-k", "not test_performance and not test_save_performance_results"],
        "performance": ["-k", "test_performance or test_save_performance_results"],
    }
    out: dict[str, Any] = {}
    for name, selection in steps.items():
        started = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   f"{task_id}.py", *selection], cwd=folder, env=env, timeout=timeout,
                                  capture_output=True, text=True)
            status, ok = (proc.stdout.strip().splitlines() or ["?"])[-1], proc.returncode == 0
            error = "" if ok else (proc.stdout + proc.stderr)[-2000:]
        except subprocess.TimeoutExpired:
            status, ok, error = f"timed out after {timeout:.0f} s", False, ""
            out["lower_bound"] = True  # the harness still ran: its cost is at least this
        out[name] = {"s": round(time.monotonic() - started, 2), "status": status, "ok": ok}
        if error:
            out[name]["error"] = error
    out["total_s"] = round(sum(v["s"] for v in out.values() if isinstance(v, dict)), 2)
    out["ok"] = all(v["ok"] for v in out.values() if isinstance(v, dict))
    return out


def shape_rows(result: Any) -> list[dict[str, Any]]:
    """A verdict's timed shapes: both latencies and how precisely they are known."""
    return [{"case": s.case, "reference_ms": s.reference_ms, "candidate_ms": s.candidate_ms,
             "repetitions": s.repetitions, "interval": s.interval} for s in result.shapes]


def at_once(judge: Any, jobs: list[Any]) -> tuple[float, list[Any]]:
    """``jobs`` judged through ``evaluate_many`` (side by side): wall seconds, the results."""
    started = time.monotonic()
    results = [result for _, result in judge.evaluate_many(jobs)]
    return round(time.monotonic() - started, 2), results


def bench_task(task: Any, code: str, args: argparse.Namespace,
               save: Any = lambda row: None) -> dict[str, Any]:
    """One task's row; ``save(row)`` after every measurement, so a call cut short keeps them."""
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate
    from geak_core.engine.plugins import get_plugin_manager
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    def copy(i: int) -> Candidate:  # distinct sources, same kernels
        return Candidate(id=f"c{i}", task_id=task.id, code=code + f"\n# copy {i}\n")

    from geak_evaluator_triton.options import option_flags

    options = option_flags(args.options, "--option")
    judge = get_plugin_manager().build("evaluator", "triton", TritonEvaluatorOptions(mode=args.mode, **options))
    row: dict[str, Any] = {"task": task.id, "options": options, "complete": False}

    def settle(what: str) -> None:  # the seconds a settled measurement waited first
        if args.settle:
            row.setdefault("settle_s", {})[what] = round(judge.settle(), 2)
    try:
        started = time.monotonic()
        cold = judge.evaluate(task, copy(0))
        row["cold_s"] = round(time.monotonic() - started, 2)
        row["phases_cold"] = cold.phases
        row.update(correct=cold.correct, reason=cold.reason, flags=cold.flags, speedup_cold=cold.speedup,
                   speedup_vs_eager_cold=cold.speedup_vs_eager)
        save(row)
        settle("warm")
        started = time.monotonic()
        warm = judge.evaluate(task, copy(1))
        row["warm_s"] = round(time.monotonic() - started, 2)
        row["phases_warm"] = warm.phases
        row["shapes_warm"] = shape_rows(warm)
        row["speedup_vs_eager_warm"] = warm.speedup_vs_eager
        save(row)
        speedups = [r.speedup for r in (warm,) if r.speedup is not None]
        if args.parallel > 0:
            settle("parallel")
            row["parallel_s"], results = at_once(judge, [EvalJob(task, copy(2 + i)) for i in range(args.parallel)])
            row["parallel"] = args.parallel
            row["parallel_over_one"] = round(row["parallel_s"] / row["warm_s"], 2) if row["warm_s"] else None
            row["parallel_correct"] = sum(1 for r in results if r.correct)
            row["parallel_phases"] = [r.phases for r in results]
            speedups += [r.speedup for r in results if r.speedup is not None]
        if speedups:
            row["speedups"] = speedups
            row["speedup_spread"] = round((max(speedups) - min(speedups)) / statistics.median(speedups), 4)
        save(row)
        repeats = [warm]
        for i in range(max(0, args.repeats - 1)):
            repeats.append(judge.evaluate(task, copy(100 + i)))
            row["repeat_speedups"] = [r.speedup for r in repeats]
            row["repeat_shapes"] = [shape_rows(r) for r in repeats]
            row["repeat_s"] = [round(r.wall_s, 2) for r in repeats]
            timed = [r.speedup for r in repeats if r.speedup is not None]
            if len(timed) > 1:
                row["repeat_spread"] = round((max(timed) - min(timed)) / statistics.median(timed), 4)
            save(row)
        if args.self_repeats > 0 and task.reference:
            with open(task.reference, encoding="utf-8") as handle:
                own = handle.read()
            selfs = [judge.evaluate(task, Candidate(id=f"self{i}", task_id=task.id, code=own))
                     for i in range(args.self_repeats)]
            row["self_speedups"] = [r.speedup for r in selfs]
            row["self_correct"] = all(r.correct for r in selfs)
            save(row)
        if args.distinct and args.parallel > 0:
            settle("distinct_one")
            started = time.monotonic()
            one = judge.evaluate(task, Candidate(id="d0", task_id=task.id, code=distinct_variant(code, 0)))
            row["distinct_one_s"] = round(time.monotonic() - started, 2)
            row["distinct_one_phases"] = one.phases
            save(row)
            settle("distinct_parallel")
            row["distinct_parallel_s"], results = at_once(judge, [
                EvalJob(task, Candidate(id=f"d{i}", task_id=task.id, code=distinct_variant(code, i)))
                for i in range(1, args.parallel + 1)])
            row["distinct_parallel_over_one"] = (round(row["distinct_parallel_s"] / row["distinct_one_s"], 2)
                                                 if row["distinct_one_s"] else None)
            row["distinct_parallel_correct"] = sum(1 for r in results if r.correct)
            row["distinct_speedups"] = [one.speedup] + [r.speedup for r in results]
            row["distinct_parallel_phases"] = [r.phases for r in results]
            save(row)
    finally:
        judge.close()
    if args.cold_parallel and args.parallel > 0:
        fresh = get_plugin_manager().build("evaluator", "triton", TritonEvaluatorOptions(mode=args.mode, **options))
        try:
            cold_copy = (lambda i: Candidate(id=f"f{i}", task_id=task.id, code=distinct_variant(code, i))
                         ) if args.distinct else copy
            row["parallel_cold_distinct"] = args.distinct
            row["parallel_cold_s"], results = at_once(
                fresh, [EvalJob(task, cold_copy(200 + i)) for i in range(args.parallel)])
            row["parallel_cold_over_cold"] = round(row["parallel_cold_s"] / row["cold_s"], 2) if row.get("cold_s") else None
            row["parallel_cold_correct"] = sum(1 for r in results if r.correct)
            row["parallel_cold_speedups"] = [r.speedup for r in results]
            row["parallel_cold_phases"] = [r.phases for r in results]
            save(row)
        finally:
            fresh.close()
    return row


def markdown(rows: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    lines = [
        f"Judge cost on {environment['device']} ({environment['date']})", "",
        "| task | correct | cold (s) | warm (s) | GEAK-eval per candidate (s) | GEAK-eval / warm | "
        "GEAK-eval / cold | 8 at once (s) | 8 / one | 8 cold / one cold | spread of repeats | "
        "spread, warm and 8 | self speedups | 8 distinct / one distinct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        geak = (r.get("geak_eval") or {}).get("total_s")
        bound = ""
        if geak is not None and not r["geak_eval"].get("ok"):
            if r["geak_eval"].get("lower_bound"):
                bound = ">= "  # a step hit --geak-timeout: GEAK-eval costs at least this
            else:
                geak = None  # its harness failed here: no cost to compare
        ratio_warm = f"{bound}{geak / r['warm_s']:.1f}x" if geak and r.get("warm_s") else "-"
        ratio_cold = f"{bound}{geak / r['cold_s']:.1f}x" if geak and r.get("cold_s") else "-"
        selfs = ", ".join(f"{s:.3f}" for s in r.get("self_speedups", []) if s is not None) or "-"
        spread = f"{100 * r['speedup_spread']:.1f} %" if "speedup_spread" in r else "-"
        repeat = f"{100 * r['repeat_spread']:.1f} %" if "repeat_spread" in r else "-"
        lines.append(
            f"| {r['task']} | {r.get('correct')} | {r.get('cold_s', '-')} | {r.get('warm_s', '-')} | "
            f"{bound}{geak if geak is not None else '-'} | {ratio_warm} | {ratio_cold} | {r.get('parallel_s', '-')} | "
            f"{r.get('parallel_over_one', '-')} | {r.get('parallel_cold_over_cold', '-')} | {repeat} | "
            f"{spread} | {selfs} | {r.get('distinct_parallel_over_one', '-')} |")
    valid = [r for r in rows if ((r.get("geak_eval") or {}).get("ok") or (r.get("geak_eval") or {}).get("lower_bound"))
             and r.get("warm_s") and r.get("cold_s")]
    ratios = [r["geak_eval"]["total_s"] / r["warm_s"] for r in valid]
    colds = [r["geak_eval"]["total_s"] / r["cold_s"] for r in valid]
    if ratios:
        lines += ["", f"median GEAK-eval / warm: {statistics.median(ratios):.1f}x; "
                      f"median GEAK-eval / cold: {statistics.median(colds):.1f}x"
                      + (" (rows marked >= are lower bounds)" if any(r["geak_eval"].get("lower_bound") for r in valid)
                         else "")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.store import atomic_write

    manager = get_plugin_manager()
    suite = manager.build("suite", "rocm")
    environment: dict[str, Any] = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
                                   "device": "cpu"}
    try:
        import torch
        import triton

        environment.update(torch=torch.__version__, triton=triton.__version__)
        if torch.cuda.is_available() and args.mode != "interpreter":
            environment["device"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    if args.prime:
        environment["prime"] = prime(args.mode)
    rows: list[dict[str, Any]] = []
    for task_id in [t for t in args.tasks.split(",") if t]:
        task = suite.get(task_id)
        code = original_kernel(args.geak_eval, task_id) if args.geak_eval else None
        if code is None:
            with open(task.reference, encoding="utf-8") as handle:
                code = handle.read()
        # What the row carries besides this judge's measurements, filled in as measured.
        extra: dict[str, Any] = {
            "candidate": "GEAK-eval original" if args.geak_eval and original_kernel(args.geak_eval, task_id)
            else "our reference"}

        def save(row: dict[str, Any], extra: dict[str, Any] = extra) -> None:
            if args.json_out:
                atomic_write(args.json_out, json.dumps({"environment": environment, "tasks": rows + [{**row, **extra}]},
                                                       indent=2, default=str))

        # GEAK-eval's harness first (its own processes and Triton cache): its figure is kept
        # even when the call ends during this judge's measurements.
        harness_tasks = [t for t in args.harness_tasks.split(",") if t]
        if args.geak_eval and (not harness_tasks or task_id in harness_tasks):
            extra["geak_eval"] = geak_eval_cost(args.geak_eval, task_id, args.geak_timeout)
            save({"task": task_id, "complete": False})

        row = bench_task(task, code, args, save)
        row.update(extra, complete=True)
        save(row)
        rows.append(row)
        print(json.dumps(row, default=str), file=sys.stderr, flush=True)
    print(markdown(rows, environment))
    return 0


if __name__ == "__main__":
    sys.exit(main())
