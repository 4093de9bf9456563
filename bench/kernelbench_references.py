"""Judge every KernelBench reference against itself, level by level.

Each problem's PyTorch ``Model`` goes through the ``triton`` judge as a candidate
(``ModelNew``): it must run every case on every seed of both stages (KernelBench's five
input draws and the judge's own, then inputs with rare huge outliers), match itself,
and on a GPU be timed. What this shows: which problems load, which references run under
the harness on this device, the judge's noise (a reference against itself, ideally
1.00) and PyTorch eager's latency of every problem as the judge measures it.

The judge's contract wants a Triton kernel of the candidate's own launched in every
call, which a PyTorch model has not; so the candidate is the problem file with
``class ModelNew(Model)`` appended, whose ``forward`` calls ``Model.forward`` and then
launches a one-element Triton kernel. The timing baseline is that same code
(``Task.timing_baseline``), so both sides pay for the extra launch and the self-speedup
shows the judge's noise alone; the problems are judged with ``forbid_torch_compute =
False`` (the reference computes with torch, as it must).

Results: ``--json OUT`` holds the environment and one row per problem, replaced
atomically after every problem, so a time limit loses nothing; running the same command
again skips the problems already in OUT. Problems are judged side by side as the
judge's slots allow, within ``--host-memory-gb`` (the machinery of
``kernelbenchx_references``). ``--table OUT[,OUT...]`` prints the per-level table.

On the GPU machine::

    python bench/kernelbench_references.py --data .ext/KernelBench --levels 1 \\
        --json bench/results/kb-level1.json --limit-s 500

On the CPU (``TRITON_INTERPRET=1``, correctness only; a smoke test on small files)::

    TRITON_INTERPRET=1 python bench/kernelbench_references.py --data DIR --levels 1 \\
        --json /tmp/kb.json --mode interpreter
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernelbenchx_references import (  # noqa: E402  (a sibling script)
    SELF_TOLERANCE,
    _fmt,
    _host_memory,
    _median,
    _write_json,
    host_bytes,
    judge_all,
    speedup_interval,
)

# Appended to a problem file: a ModelNew that is Model plus a kernel of the candidate's own.
KERNEL_SHIM = '''

# ---- appended by bench/kernelbench_references.py: Model, with a kernel of its own ----
import torch as _kb_torch
import triton as _kb_triton
import triton.language as _kb_tl


@_kb_triton.jit
def _kb_touch(ptr):
    _kb_tl.store(ptr, _kb_tl.load(ptr) + 1.0)


_kb_scratch = {}


class ModelNew(Model):
    def forward(self, *args, **kwargs):
        result = super().forward(*args, **kwargs)
        first = result[0] if isinstance(result, (tuple, list)) else result
        device = first.device
        if device not in _kb_scratch:
            _kb_scratch[device] = _kb_torch.zeros(1, dtype=_kb_torch.float32, device=device)
        _kb_touch[(1,)](_kb_scratch[device])
        return result
'''


def self_candidate(task: Any) -> str:
    """The problem file with the shimmed ModelNew appended."""
    with open(task.extra["file"], encoding="utf-8") as handle:
        return handle.read().rstrip("\n") + "\n" + KERNEL_SHIM


def bench_task_of(task: Any, folder: str) -> Any:
    """The task as this benchmark judges its reference: torch compute allowed, the timing
    baseline the same shimmed code as the candidate (written under ``folder``)."""
    baseline = os.path.join(folder, f"{task.id}.py")
    with open(baseline, "w", encoding="utf-8") as handle:
        handle.write(self_candidate(task))
    return dataclasses.replace(task, forbid_torch_compute=False, timing_baseline=baseline)


def row_of(task: Any, result: Any, wall_s: float) -> dict[str, Any]:
    shapes = []
    for shape in result.shapes:
        entry = shape.to_dict()
        entry["eager_ms"] = entry.get("eager_ms") or entry.get("reference_ms")
        shapes.append(entry)
    return {
        "task": task.id,
        "level": task.extra.get("level"),
        "problem_id": task.extra.get("problem_id"),
        "call_ok": result.call_ok,
        "correct": result.correct,
        "failed_stage": result.failed_stage,
        "reason": result.reason,
        "flags": list(result.flags),
        "skipped": result.skipped,
        "performance_measured": result.performance_measured,
        "performance_note": result.performance_note,
        "speedup": result.speedup,
        "roofline_fraction": result.roofline_fraction,
        "shapes": shapes,
        "wall_s": round(wall_s, 2),
        "phases": dict(result.phases),
    }


def merged(paths: list[str]) -> dict[str, Any]:
    """Several ``--json`` files as one (a later file's row of a problem replaces an earlier)."""
    data: dict[str, Any] = {"environment": {}, "tasks": []}
    rows: dict[str, dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            part = json.load(handle)
        data["environment"] = data["environment"] or part.get("environment", {})
        for row in part.get("tasks", []):
            rows[row["task"]] = row
    data["tasks"] = list(rows.values())
    return data


def level_table(data: dict[str, Any]) -> str:
    """The per-level markdown table of a ``--json`` file's content, and the exceptions."""
    environment = data.get("environment", {})
    rows = data.get("tasks", [])
    lines = [
        f"Device: {environment.get('device', '?')} ({environment.get('mode', '?')}), "
        f"torch {environment.get('torch', '?')}, triton {environment.get('triton', '?')}",
        "",
        "| level | problems judged | correct against itself | timed | self-speedup within "
        f"1.00 +- {SELF_TOLERANCE:.2f} | self-speedup median | PyTorch eager median (ms) | "
        "judge wall s (sum) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    levels = sorted({row.get("level") for row in rows}, key=lambda v: (v is None, v))
    for level in [*levels, "all"]:
        group = rows if level == "all" else [r for r in rows if r.get("level") == level]
        timed = [r for r in group if r.get("speedup") is not None]
        within = [r for r in timed if abs(r["speedup"] - 1.0) <= SELF_TOLERANCE]
        eager = [s["eager_ms"] for r in group for s in r.get("shapes", []) if s.get("eager_ms")]
        share = f" ({len(within) / len(timed):.1%})" if timed else ""
        lines.append(
            f"| {'**all**' if level == 'all' else level} | {len(group)} | "
            f"{sum(1 for r in group if r.get('correct'))} | {len(timed)} | "
            f"{len(within)}{share} | {_fmt(_median([r['speedup'] for r in timed]))} | "
            f"{_fmt(_median(eager), '{:.4f}')} | {sum(r.get('wall_s') or 0 for r in group):.0f} |")
    drifting = [r for r in rows if r.get("speedup") is not None
                and abs(r["speedup"] - 1.0) > SELF_TOLERANCE]
    if drifting:
        lines += ["", f"Self-speedups outside 1.00 +- {SELF_TOLERANCE:.2f} (with the half-width "
                      "of each one's 95 % interval):", ""]
        for row in sorted(drifting, key=lambda r: r["speedup"]):
            half = speedup_interval(row)
            lines.append(f"* {row['task']}: {row['speedup']:.3f}"
                         + (f" (+- {half:.3f})" if half is not None else ""))
    untimed = [r for r in rows if r.get("correct") and r.get("speedup") is None]
    if untimed and environment.get("mode") == "gpu":
        lines += ["", "Correct against itself, without a self-speedup:", ""]
        lines += [f"* {r['task']}: {(r.get('performance_note') or '?')[:200]}" for r in untimed]
    failed = [r for r in rows if not r.get("correct")]
    if failed:
        lines += ["", "Not correct against itself:", ""]
        for row in sorted(failed, key=lambda r: r["task"]):
            why = (row.get("reason") or ", ".join(row.get("flags", [])) or "?").replace("\n", " ")
            lines.append(f"* {row['task']}: {why[:240]}")
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("GEAK_KERNELBENCH_DATA", ""),
                        help="KernelBench checkout (default: $GEAK_KERNELBENCH_DATA)")
    parser.add_argument("--levels", default="1,2", help="comma-separated levels (default 1,2)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--json", dest="json_out", default="",
                        help="results file, replaced after every problem; resumed when it exists")
    parser.add_argument("--table", default="", help="print the table of these results files, exit")
    parser.add_argument("--limit-s", type=float, default=0.0,
                        help="start no problem after this many seconds (0: no limit)")
    parser.add_argument("--timeout", type=float, default=300.0, help="per child process, seconds")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--workers", type=int, default=0, help="GPUs the judge uses (0: all)")
    parser.add_argument("--host-memory-gb", type=float, default=0.0,
                        help="host memory the problems judged at once may hold (default: 60 %% "
                             "of the machine's)")
    parser.add_argument("--evaluator-option", action="append", default=[], metavar="KEY=VALUE",
                        help="another of the triton judge's options (TOML value), repeatable")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.table:
        print(level_table(merged(args.table.split(","))))
        return 0
    if not args.data:
        print("--data: give the KernelBench checkout (or set GEAK_KERNELBENCH_DATA)",
              file=sys.stderr)
        return 2
    from geak_core.api.errors import InputError
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions, option_flags
    from geak_suite_kernelbench.suite import KernelBenchOptions, KernelBenchSuite

    overrides = option_flags(args.evaluator_option, "--evaluator-option")
    try:
        levels = [int(v) for v in args.levels.split(",") if v]
        suite = KernelBenchSuite(KernelBenchOptions(path=args.data, levels=levels))
        wanted = [t for t in args.tasks.split(",") if t]
        tasks = [suite.get(t) for t in wanted] if wanted else suite.tasks()
    except (InputError, ValueError) as exc:
        print(f"--data {args.data} --levels {args.levels}: {exc}", file=sys.stderr)
        return 2
    for task_id, why in suite.unusable().items():
        print(f"unusable: {task_id}: {why}", file=sys.stderr)
    # three problems side by side and 2 GB of kept reference outputs: level 1's inputs and
    # outputs are gigabytes, and at the judge's 8 per GPU the host's OOM killer ended the
    # bench on a 128 GiB H200 machine (docs/benchmarks.md); --evaluator-option overrides
    evaluator = TritonEvaluator(TritonEvaluatorOptions(**{
        "mode": args.mode, "workers": args.workers, "timeout_s": args.timeout,
        "reference_timeout_s": args.timeout, "prepare_timing": "up_front",
        "candidates_per_gpu": 3, "reference_cache_mb": 2048, **overrides}))
    started = time.monotonic()
    baselines = tempfile.mkdtemp(prefix="geak-kb-baselines-")
    try:
        runtime = evaluator.runtime()
        environment: dict[str, Any] = {
            "mode": runtime.mode, "device": runtime.device_name, "workers": len(runtime.slots),
            "python": platform.python_version(), "data": os.path.abspath(args.data),
            "levels": levels, "evaluator_options": overrides}
        try:
            import torch
            import triton

            environment.update(torch=torch.__version__, triton=triton.__version__)
        except ImportError:
            pass
        data: dict[str, Any] = {"environment": environment, "tasks": []}
        if args.json_out and os.path.exists(args.json_out):
            with open(args.json_out, encoding="utf-8") as handle:
                previous = json.load(handle)
            if previous.get("environment", {}).get("device") != environment["device"]:
                print(f"{args.json_out} holds results of another device: use another file",
                      file=sys.stderr)
                return 2
            data["tasks"] = previous.get("tasks", [])
        done = {row["task"] for row in data["tasks"]}
        todo = [t for t in tasks if t.id not in done]
        print(f"{len(done)} problem(s) already judged, {len(todo)} to judge on "
              f"{environment['device']}", file=sys.stderr, flush=True)
        deadline = started + args.limit_s if args.limit_s > 0 else math.inf
        parallel = max(1, int(getattr(evaluator, "max_parallel", 1)))
        need = {t.id: host_bytes([c for c in _cases(t)]) for t in todo}
        budget = args.host_memory_gb * 1e9 if args.host_memory_gb > 0 else 0.6 * _host_memory()

        def judge(task: Any) -> tuple[Any, Any, float]:
            began = time.monotonic()
            result = evaluator.evaluate(bench_task_of(task, baselines), Candidate(
                id="reference", task_id=task.id, code=self_candidate(task)))
            return task, result, time.monotonic() - began

        def record(task: Any, result: Any, wall: float) -> None:
            row = row_of(task, result, wall)
            data["tasks"].append(row)
            print(f"{task.id}: correct={row['correct']} speedup={_fmt(row['speedup'])} "
                  f"{row['wall_s']} s {row['reason'] or ''}"[:240], file=sys.stderr, flush=True)
            if args.json_out:
                environment["total_s"] = round(time.monotonic() - started, 1)
                _write_json(args.json_out, data)

        left = judge_all(list(todo), need, budget, parallel, deadline, judge, record)
        if left:
            print(f"time limit: {len(left)} problem(s) not started; run again to go on",
                  file=sys.stderr)
    finally:
        evaluator.close()
        shutil.rmtree(baselines, ignore_errors=True)
    print(level_table(data))
    return 0


def _cases(task: Any) -> list[Any]:
    """The task's full cases (their bytes come from the suite's meta run)."""
    from geak_suite_local.harness import ModelHarness

    return ModelHarness(task).cases("full")


if __name__ == "__main__":
    sys.exit(main())
