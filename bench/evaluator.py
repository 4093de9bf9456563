"""Benchmark the judge itself: cost of a verdict and repeatability of its speedups.

For each task of a suite the reference implementation is judged as a candidate:

* cold: the first full judgement (reference run, candidate run, comparison
  and, on a GPU, timing), wall seconds, split by phase: the reference run is
  paid once per task, so "new candidate" = candidate + timing phases of that
  first judgement (its compiles included) is what each further candidate costs;
* warm: the same candidate judged again through the worker pool (reference
  cached, compiled kernels in Triton's cache), mean wall seconds;
* repeatability: ``--repeats`` speedups of the reference against itself (the
  cold one and ``repeats - 1`` warm ones), ideally 1.0: median and min..max;
* throughput: evaluations per minute of the warm judgements.

Prints a markdown table; ``--json`` writes the figures. Under the interpreter
(``--mode interpreter``, a CPU smoke test) no speedups exist and the table
says so.

    python bench/evaluator.py --suite rocm --tasks softmax,test_add_kernel --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="rocm")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--repeats", type=int, default=5,
                        help="speedups per task, the cold judgement included (1: cold only)")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--pythonpath", action="append", default=[])
    parser.add_argument("--json", dest="json_out", default="")
    return parser.parse_args(argv)


def _build(args: argparse.Namespace) -> tuple[Any, Any]:
    from geak_core.engine.plugins import get_plugin_manager
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    manager = get_plugin_manager()
    spec = manager.spec("suite", args.suite)
    suite = manager.build("suite", args.suite, spec.options() if spec.options else None)
    options = TritonEvaluatorOptions(
        mode=args.mode, workers=args.workers, timeout_s=args.timeout,
        extra_pythonpath=[os.path.abspath(p) for p in args.pythonpath],
    )
    return suite, manager.build("evaluator", "triton", options)


def bench_task(evaluator: Any, task: Any, repeats: int) -> dict[str, Any]:
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    with open(task.reference, encoding="utf-8") as handle:
        code = handle.read()
    started = time.monotonic()
    cold = evaluator.evaluate(task, Candidate(id="reference-cold", task_id=task.id, code=code))
    cold_s = time.monotonic() - started
    phases = dict(cold.phases)
    row: dict[str, Any] = {
        "task": task.id,
        "correct": cold.correct,
        "reason": cold.reason,
        "flags": cold.flags,
        "cold_s": round(cold_s, 2),
        "phases_cold": phases,
        "new_candidate_s": round(phases.get("candidate", 0.0) + phases.get("timing", 0.0), 2),
        "failed_stage": cold.failed_stage,
        "performance_measured": cold.performance_measured,
        "speedup_cold": cold.speedup,
        "roofline_fraction": cold.roofline_fraction,
        "skipped": cold.skipped,
        "shapes": [shape.to_dict() for shape in cold.shapes],
        "speedups": [cold.speedup] if cold.speedup is not None else [],
    }
    if not cold.correct or repeats <= 1:
        return row
    jobs = [EvalJob(task, Candidate(id=f"reference-{i}", task_id=task.id, code=code))
            for i in range(1, repeats)]
    started = time.monotonic()
    results = [result for _, result in evaluator.evaluate_many(jobs)]
    warm_s = time.monotonic() - started
    row["evaluations_per_minute"] = round(60.0 * len(results) / warm_s, 2) if warm_s else None
    row["warm_mean_s"] = round(statistics.mean(r.wall_s for r in results), 2)
    row["phases_warm"] = [r.phases for r in results]
    row["speedups"] += [r.speedup for r in results if r.speedup is not None]
    row["all_correct"] = all(r.correct for r in results)
    speedups = row["speedups"]
    if len(speedups) > 1:
        row["speedup_median"] = statistics.median(speedups)
        row["speedup_min"] = min(speedups)
        row["speedup_max"] = max(speedups)
        per_shape: dict[str, list[float]] = {}
        for result in [cold, *results]:
            for shape in result.shapes:
                if shape.speedup is not None:
                    per_shape.setdefault(shape.case, []).append(shape.speedup)
        row["worst_shape_spread"] = max(
            (max(v) - min(v) for v in per_shape.values() if len(v) > 1), default=None)
    return row


def markdown(rows: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    lines = [
        f"Judge benchmark: {environment['mode']} on {environment['device']}",
        "",
        "| task | correct | cold judge (s) | of which reference (s) | new candidate (s) | "
        "warm judge (s) | evals/min | speedup median | speedup min..max | worst shape spread |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        median = row.get("speedup_median")
        spread = (f"{row['speedup_min']:.3f}..{row['speedup_max']:.3f}"
                  if "speedup_min" in row else "-")
        worst = row.get("worst_shape_spread")
        lines.append(
            f"| {row['task']} | {'yes' if row['correct'] else 'NO: ' + str(row['reason'])[:60]} | "
            f"{row['cold_s']} | {row['phases_cold'].get('reference', '-')} | "
            f"{row['new_candidate_s']} | {row.get('warm_mean_s', '-')} | "
            f"{row.get('evaluations_per_minute', '-')} | "
            f"{'-' if median is None else f'{median:.3f}'} | {spread} | "
            f"{'-' if worst is None else f'{worst:.3f}'} |"
        )
    if environment["mode"] == "interpreter":
        lines += ["", "Interpreter mode: kernels run on the CPU, so no speedup is measured."]
    return "\n".join(lines)


def _write_json(path: str, environment: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    from geak_core.engine.store import atomic_write

    atomic_write(path, json.dumps({"environment": environment, "tasks": rows}, indent=2, default=str))


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    suite, evaluator = _build(args)
    wanted = [t for t in args.tasks.split(",") if t]
    tasks = [suite.get(t) for t in wanted] if wanted else suite.tasks()
    runtime = evaluator.runtime()
    environment = {
        "mode": runtime.mode,
        "device": runtime.device_name,
        "workers": len(runtime.slots),
        "python": platform.python_version(),
        "suite": args.suite,
        "repeats": args.repeats,
    }
    try:
        import torch
        import triton

        environment.update(torch=torch.__version__, triton=triton.__version__)
    except ImportError:
        pass
    rows = []
    started = time.monotonic()
    try:
        for task in tasks:
            row = bench_task(evaluator, task, args.repeats)
            rows.append(row)
            print(f"{task.id}: cold {row['cold_s']} s, correct={row['correct']}", file=sys.stderr,
                  flush=True)
            if args.json_out:  # after every task, so an interrupted run keeps what it measured
                _write_json(args.json_out, environment, rows)
    finally:
        evaluator.close()
    environment["total_s"] = round(time.monotonic() - started, 1)
    print(markdown(rows, environment))
    if args.json_out:
        _write_json(args.json_out, environment, rows)
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
