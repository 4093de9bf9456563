"""Judge every KernelBench-X reference against itself, and tabulate the result per category.

Each task's PyTorch reference goes through the ``triton`` judge as a
candidate: it must run the task's test on every case in both stages (the
test's standard-mode inputs, then its outlier-mode inputs), match itself, and
on a GPU be timed on the inputs of the task's performance script. What this
shows: which tasks load, which references run under the harness on this
device, the judge's noise (a reference against itself, ideally 1.0), the
PyTorch eager latency of every performance input as the judge measures it on
this machine, its max(IOU, MFU) (the judge's roofline fraction: the larger of
achieved bandwidth and achieved FLOP rate over the hardware profile's peaks),
and, where the benchmark published timings for this GPU, those beside it.

The judge's contract wants a Triton kernel of the candidate's own launched in
every run, which a PyTorch function has not. So the candidate is the
reference with each entry point wrapped to also launch a one-element Triton
kernel after the call. The timing baseline is that same shimmed code
(``Task.timing_baseline``), so both sides pay for the extra launch and the
self-speedup shows the judge's noise alone; the PyTorch eager column is the
reference without the shim, which the judge times beside the baseline as it
does for every task whose reference is eager. For the same reason the tasks
are judged here with ``forbid_torch_compute = False`` and, for the
quantization tasks, without the
quantization source check (the reference is the float PyTorch code the
candidates replace); the approximation contract still compares.

Results: ``--json OUT`` holds the environment and one row per task, replaced
atomically after every task, so a time limit loses nothing; running the same
command again skips the tasks already in OUT, except those that ended in a judge
error with ``--retry-errors`` (on another device it refuses: timings are per machine).
Tasks run side by side as the judge's slots allow, but a task starts only when its
estimated host memory (``host_bytes``: its performance script's inputs are drawn
on the host, up to 18 GB a seed for fused_bmm_dropout_gelu) fits beside the
running ones within ``--host-memory-gb`` (60 % of the machine's by default; a
task that needs more runs alone, after the others); eight
such tasks at once had the kernel's OOM killer end judge children; a task whose child is
killed all the same while others ran beside it is judged once more with nothing beside it,
after the others (``judge_all``). ``--limit-s N`` starts no task after N seconds
(tasks already running finish, each child bounded by ``--timeout``).
``--table OUT`` prints the per-category table of an existing OUT
(``category_table``) and exits.

On the GPU machine::

    python bench/kernelbenchx_references.py --data .ext/KernelBenchX \\
        --json bench/results/kbx-references.json --limit-s 540 --timeout 300

On a machine of N GPUs, one run per GPU, each with ``--shard K/N`` and its own ``--json``
(and ``--host-memory-gb`` splitting the host between them); the table of all of them:
``--table a.json,b.json``. Where files judge a task again, the table keeps the later
file's row, and lists every task timed more than once that read outside 1.00 +- 0.03 in
any of its judgements, with all of them, how far the repeated self-speedups lie from
1.00 in the sd their own intervals imply (``repeated``, ``spread``), and, for such a task
judged three times or more, how many judgements averaged would hold it within 0.03 99 % of
the time (``judgements_needed``).

On the CPU (``TRITON_INTERPRET=1``, correctness only; a smoke test)::

    TRITON_INTERPRET=1 python bench/kernelbenchx_references.py --data .ext/KernelBenchX \\
        --tasks relu,abs,mse_loss --json /tmp/kbx.json --mode interpreter
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

# Appended to a reference so the judge's contract (a kernel of its own in every run) holds.
KERNEL_SHIM = '''

# ---- appended by bench/kernelbenchx_references.py: a kernel of the candidate's own ----
import triton as _kbx_triton
import triton.language as _kbx_tl


@_kbx_triton.jit
def _kbx_touch(ptr):
    _kbx_tl.store(ptr, _kbx_tl.load(ptr) + 1.0)


_kbx_scratch = {}


def _kbx_device(values):
    """The device of the first tensor not on the CPU among values (nested), else None."""
    for value in values:
        if isinstance(value, torch.Tensor) and value.device.type != "cpu":
            return value.device
        if isinstance(value, (list, tuple)):
            found = _kbx_device(value)
            if found is not None:
                return found
        if isinstance(value, dict):
            found = _kbx_device(list(value.values()))
            if found is not None:
                return found
    return None


def _kbx_with_kernel(function):
    def call(*args, **kwargs):
        result = function(*args, **kwargs)
        device = _kbx_device([result, *args, *kwargs.values()])
        if device is None:
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device not in _kbx_scratch:
            _kbx_scratch[device] = torch.zeros(1, dtype=torch.float32, device=device)
        _kbx_touch[(1,)](_kbx_scratch[device])
        return result
    return call
'''


def self_candidate(task: Any) -> str:
    """The reference's code with every entry point also launching a one-element kernel."""
    with open(task.reference, encoding="utf-8") as handle:
        code = handle.read()
    lines = [code.rstrip("\n"), "import torch", KERNEL_SHIM]
    lines += [f"{e.name} = _kbx_with_kernel({e.name})" for e in task.entry_points]
    return "\n".join(lines) + "\n"


def bench_task_of(task: Any, folder: str) -> Any:
    """The task as this benchmark judges its reference (see the module docstring): its timing
    baseline is the same shimmed code as the candidate, written under ``folder``."""
    extra = dict(task.extra)
    if extra.get("quantization"):
        extra["quantization"] = {**extra["quantization"], "check": False}
    baseline = os.path.join(folder, f"{task.id}.py")
    with open(baseline, "w", encoding="utf-8") as handle:
        handle.write(self_candidate(task))
    return dataclasses.replace(task, forbid_torch_compute=False, extra=extra, timing_baseline=baseline)


def _published(suite: Any, task: Any, device: str, shape: dict[str, Any],
               params: dict[str, Any]) -> dict[str, Any] | None:
    from geak_suite_kernelbenchx.published import row_for

    machine, rows = suite.published_for(task.id, device)
    if not machine or "inputs" not in params:
        return None
    row = row_for(rows, params["inputs"])
    if row is None:
        return {"machine": machine, "ms": None}
    found = {"machine": machine, "ms": row["ms"]}
    if shape.get("reference_ms") and row["ms"]:
        found["measured_over_published"] = shape["reference_ms"] / row["ms"]
    return found


def row_of(suite: Any, task: Any, result: Any, device: str, cases: dict[str, Any],
           wall_s: float) -> dict[str, Any]:
    shapes = []
    for shape in result.shapes:
        entry = shape.to_dict()
        # PyTorch eager is the reference without the shim, measured beside the shimmed baseline
        entry["eager_ms"] = entry.get("eager_ms") or entry.get("reference_ms")
        entry["max_iou_mfu"] = entry.get("roofline_fraction")
        published = _published(suite, task, device, entry, cases.get(shape.case, {}))
        if published:
            entry["published"] = published
        shapes.append(entry)
    return {
        "task": task.id,
        "category": task.category,
        "precision": task.extra.get("precision"),
        "variant_of": task.extra.get("variant_of"),
        "quantization": bool(task.extra.get("quantization")),
        "two_stages": task.outliers is not None,
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
        "phases": dict(result.phases),  # where the judge's time went (docs/evaluator.md)
    }


def _write_json(path: str, data: dict[str, Any]) -> None:
    from geak_core.engine.store import atomic_write

    atomic_write(path, json.dumps(data, indent=1, default=str))


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)


SELF_TOLERANCE = 0.03  # a reference timed against itself should read 1.00 within this


def speedup_interval(row: dict[str, Any]) -> float | None:
    """Half-width of a row's 95 % interval around its speedup (the mean of its cases'
    ratios, the judge's default headline), from its cases' medians alone: a case's
    ``interval`` is the larger of its two medians' relative half-widths, so its ratio's is
    at most sqrt(2) times that, and the mean's that over the cases in quadrature, divided
    by their number. None without cases that have one. What it leaves out is whatever
    moves all of a timing's calls alike (a process's offset): a self-speedup outside it is
    that, not too few calls."""
    shapes = [s for s in row.get("shapes") or [] if s.get("speedup") and s.get("interval") is not None]
    if not shapes:
        return None
    return math.sqrt(sum((s["speedup"] * math.sqrt(2) * s["interval"]) ** 2 for s in shapes)) / len(shapes)


def merged(paths: list[str]) -> dict[str, Any]:
    """The results of several ``--json`` files (one per shard) as one: the first file's
    environment, every task's row once (a later file's row replaces an earlier one's), and
    under ``judgements`` each task's self-speedups in every file, in order, with the file's
    name and the half-width of its interval (``speedup_interval``, None without one): what
    the later row does not say of a task judged more than once."""
    data: dict[str, Any] = {"environment": {}, "tasks": [], "judgements": {}}
    rows: dict[str, dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            part = json.load(handle)
        data["environment"] = data["environment"] or part.get("environment", {})
        for row in part.get("tasks", []):
            rows[row["task"]] = row
            data["judgements"].setdefault(row["task"], []).append(
                (os.path.basename(path), row.get("speedup"), speedup_interval(row)))
    data["tasks"] = list(rows.values())
    return data


def repeated(data: dict[str, Any]) -> list[str]:
    """Lines on the tasks ``merged`` found timed more than once: how many, how far their
    self-speedups lie from 1.00 in the sd each one's own interval implies (``spread``), and
    each task outside 1.00 +- SELF_TOLERANCE in any of its judgements, with all of them, the
    row kept last, and (judged three times or more) their rms distance from 1.00 against
    the sd their intervals imply."""
    rows = {row["task"]: row for row in data.get("tasks", [])}
    timed = {task: [found[1:] for found in judged if found[1] is not None]
             for task, judged in (data.get("judgements") or {}).items()}
    again = {task: found for task, found in timed.items() if len(found) > 1}
    if not again:
        return []
    moving = {task: found for task, found in again.items()
              if any(abs(speedup - 1.0) > SELF_TOLERANCE for speedup, _ in found)}
    lines = ["", f"Timed more than once: {len(again)} tasks, {sum(len(f) for f in again.values())} self-speedups; "
             f"outside 1.00 +- {SELF_TOLERANCE:.2f} in at least one of them: {len(moving)}"
             + (" (each one's self-speedups in the files' order; the table keeps the last file's row):"
                if moving else ".")]
    measured = spread([judged for found in again.values() for judged in found])
    if measured:
        lines.append(measured)
    if moving:
        lines.append("")
    for task in sorted(moving, key=lambda t: (rows.get(t, {}).get("category") or "", t)):
        values = ", ".join(f"{speedup:.3f}" for speedup, _ in moving[task])
        between = between_and_implied(moving[task])
        lines.append(f"* {rows.get(task, {}).get('category')}/{task}: {values}"
                     + (f" (rms distance from 1.00 {between[0]:.3f}; their intervals imply {between[1]:.3f}; "
                        f"{judgements_needed(between[0]):.1f} judgements averaged would hold it within "
                        f"{SELF_TOLERANCE:.2f} 99 % of the time)"
                        if between else ""))
    return lines


def spread(judgements: list[tuple[float, float | None]]) -> str:
    """One line on self-speedups (speedup, interval half-width) with an interval: the rms of
    their distance from 1.00 in the sd each one's 95 % interval implies (its half-width over
    1.96; 1.0 where the intervals are right, more where something moves whole timings that
    they leave out), and how many lie outside their own interval. Empty without any."""
    known = [(speedup, half) for speedup, half in judgements if half]
    if not known:
        return ""
    units = [(speedup - 1.0) / (half / 1.96) for speedup, half in known]
    outside = sum(1 for speedup, half in known if abs(speedup - 1.0) > half)
    rms = math.sqrt(sum(u * u for u in units) / len(units))
    return (f"Their distance from 1.00 in the sd each one's own interval implies: rms {rms:.2f} over "
            f"{len(known)} (1.00 if the intervals are right); outside their own 95 % interval: {outside}.")


HOLD_Z = 2.576  # one judgement within SELF_TOLERANCE of 1.00 99 % of the time (normal quantile)


def judgements_needed(rms: float, tolerance: float = SELF_TOLERANCE, z: float = HOLD_Z) -> float:
    """How many independent judgements (each its own pair of processes), averaged, a task
    whose self-speedups lie ``rms`` from 1.00 would need for the average to land within
    ``tolerance`` as often as ``z`` says (99 % by default): (rms z / tolerance)^2, at least 1.
    More calls in one judgement only shrink the part of ``rms`` its own interval implies;
    what moves a whole judgement (its processes' offset) averages only over judgements."""
    return max(1.0, (rms * z / tolerance) ** 2)


def between_and_implied(judgements: list[tuple[float, float | None]]) -> tuple[float, float] | None:
    """For a task judged at least three times, each with an interval: the rms distance of its
    self-speedups from 1.00 and the sd their intervals imply (rms of half-width / 1.96)."""
    known = [(speedup, half) for speedup, half in judgements if half]
    if len(known) < 3 or len(known) < len(judgements):
        return None
    between = math.sqrt(sum((speedup - 1.0) ** 2 for speedup, _ in known) / len(known))
    implied = math.sqrt(sum((half / 1.96) ** 2 for _, half in known) / len(known))
    return between, implied


def category_table(data: dict[str, Any]) -> str:
    """The per-category markdown table of a ``--json`` file's content."""
    environment = data.get("environment", {})
    rows = data.get("tasks", [])
    by_category: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_category.setdefault(row.get("category") or "?", []).append(row)
    lines = [
        f"Device: {environment.get('device', '?')} ({environment.get('mode', '?')}), "
        f"torch {environment.get('torch', '?')}, triton {environment.get('triton', '?')}; "
        f"published timings matched: {environment.get('published_machine') or 'none'}",
        "",
        "| category | tasks | reference correct | two stages | skipped | judge error | "
        "timed cases | self-speedup median | PyTorch eager median (ms) | max(IOU, MFU) median | "
        "eager / published median |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, list[Any]] = {k: [] for k in ("speed", "eager", "frac", "ratio")}
    counts = {"tasks": 0, "correct": 0, "two": 0, "skipped": 0, "error": 0, "timed": 0}

    def line(name: str, group: list[dict[str, Any]], collect: bool) -> str:
        shapes = [s for r in group for s in r.get("shapes", []) if s.get("reference_ms")]
        speed = [r["speedup"] for r in group if r.get("speedup")]
        eager = [s["reference_ms"] for s in shapes]
        frac = [s["roofline_fraction"] for s in shapes if s.get("roofline_fraction") is not None]
        ratio = [s["published"]["measured_over_published"] for s in shapes
                 if (s.get("published") or {}).get("measured_over_published")]
        figures = {
            "tasks": len(group),
            "correct": sum(1 for r in group if r.get("correct")),
            "two": sum(1 for r in group if r.get("two_stages")),
            "skipped": sum(1 for r in group if "skipped" in r.get("flags", [])),
            "error": sum(1 for r in group if "judge_error" in r.get("flags", [])),
            "timed": len(shapes),
        }
        if collect:
            for key, values in (("speed", speed), ("eager", eager), ("frac", frac),
                                ("ratio", ratio)):
                totals[key] += values
            for key, value in figures.items():
                counts[key] += value
        return (f"| {name} | {figures['tasks']} | {figures['correct']} | {figures['two']} | "
                f"{figures['skipped']} | {figures['error']} | {figures['timed']} | "
                f"{_fmt(_median(speed))} | {_fmt(_median(eager), '{:.4f}')} | "
                f"{_fmt(_median(frac), '{:.1%}')} | {_fmt(_median(ratio), '{:.2f}')} |")

    for category in sorted(by_category):
        lines.append(line(category, by_category[category], collect=True))
    lines.append(line("**all**", rows, collect=False))
    untimed = [r for r in rows if r.get("correct") and r.get("speedup") is None]
    if untimed:
        lines += ["", "Correct against itself, without a self-speedup:", ""]
        for row in sorted(untimed, key=lambda r: (r.get("category") or "", r["task"])):
            why = (row.get("performance_note") or row.get("reason") or ", ".join(row.get("flags", []))
                   or "no reason recorded (rows written before the bench kept the judge's note)")
            lines.append(f"* {row.get('category')}/{row['task']}: {why.replace(chr(10), ' ')[:200]}")
    drifting = [r for r in rows if r.get("speedup") is not None and abs(r["speedup"] - 1.0) > SELF_TOLERANCE]
    if drifting:
        lines += ["", f"Self-speedups outside 1.00 +- {SELF_TOLERANCE:.2f} (and the half-width of each one's 95 % "
                  "interval from its cases' medians, speedup_interval):", ""]
        for row in sorted(drifting, key=lambda r: r["speedup"]):
            flags = ", ".join(f for f in row.get("flags", []) if f != "weak_test")
            half = speedup_interval(row)
            notes = ([flags] if flags else []) + ([f"+- {half:.3f}"] if half is not None else [])
            lines.append(f"* {row.get('category')}/{row['task']}: {row['speedup']:.3f}"
                         + (f" ({'; '.join(notes)})" if notes else ""))
    halves = [(r["speedup"], speedup_interval(r)) for r in rows if r.get("speedup") is not None]
    halves = [(speedup, half) for speedup, half in halves if half is not None]
    if halves:
        covered = sum(1 for speedup, half in halves if abs(speedup - 1.0) <= half)
        lines += ["", f"Self-speedups whose 95 % interval holds 1.00: {covered} of {len(halves)}."]
    lines += repeated(data)
    failed = [r for r in rows if not r.get("correct")]
    if failed:
        lines += ["", "Not correct against itself:", ""]
        for row in sorted(failed, key=lambda r: (r.get("category") or "", r["task"])):
            why = (row.get("reason") or ", ".join(row.get("flags", [])) or "?").replace("\n", " ")
            lines.append(f"* {row.get('category')}/{row['task']}: {why[:200]}")
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("GEAK_KERNELBENCHX_DATA", ""),
                        help="KernelBench-X checkout (default: $GEAK_KERNELBENCHX_DATA)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--json", dest="json_out", default="",
                        help="results file, replaced after every task; resumed when it exists")
    parser.add_argument("--table", default="",
                        help="print the table of this results file (or of several, comma-separated: "
                             "one --shard each; a task in several gets the later file's row, and the tasks "
                             "judged more than once are listed after the table), exit")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="judge only every N-th task, from the K-th (0-based): N runs, one per GPU "
                             "(CUDA_VISIBLE_DEVICES), each with its own --json")
    parser.add_argument("--limit-s", type=float, default=0.0,
                        help="start no task after this many seconds (0: no limit)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per child process, seconds")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--workers", type=int, default=0,
                        help="GPUs the judge uses, or CPU workers under the interpreter (0: every "
                             "visible GPU; min(4, CPUs)); how many tasks are judged at once on a GPU is "
                             "the judge's candidates_per_gpu (--evaluator-option candidates_per_gpu=1: "
                             "one at a time) and --host-memory-gb")
    parser.add_argument("--retry-errors", action="store_true",
                        help="judge again the tasks of OUT that ended in a judge error")
    parser.add_argument("--host-memory-gb", type=float, default=0.0,
                        help="host memory the tasks judged at once may hold, estimated from "
                             "their timed cases' bytes (default: 60 %% of the machine's)")
    parser.add_argument("--reference-cache-mb", type=int, default=1024,
                        help="the judge's in-memory reference outputs (each task is judged once "
                             "here, so a kept reference only costs memory)")
    parser.add_argument("--evaluator-option", action="append", default=[], metavar="KEY=VALUE",
                        help="another of the triton judge's options (VALUE in TOML syntax, e.g. "
                             "pin_timing_cpus=false), repeatable; recorded in the results' "
                             "environment (use another --json for another setting)")
    return parser.parse_args(argv)


def _environment(evaluator: Any, args: argparse.Namespace, suite: Any,
                 overrides: dict[str, Any]) -> dict[str, Any]:
    from geak_suite_kernelbenchx.published import machine_for

    runtime = evaluator.runtime()
    machines = sorted({m for t in suite.tasks() for m in (t.extra.get("published_ms") or {})})
    environment = {
        "mode": runtime.mode,
        "device": runtime.device_name,
        "workers": len(runtime.slots),
        "python": platform.python_version(),
        "data": os.path.abspath(args.data),
        "published_machines": machines,
        "published_machine": machine_for(runtime.device_name or "", machines)
        if runtime.mode == "gpu" else None,
        "evaluator_options": overrides,
    }
    try:
        import torch
        import triton

        environment.update(torch=torch.__version__, triton=triton.__version__)
    except ImportError:
        pass
    return environment


def _cases(task: Any) -> list[Any]:
    """The task's full cases (read from the harness, in this process: the reference is
    trusted code; a performance script's inputs are drawn on the meta device)."""
    try:
        import importlib

        module, _, name = task.harness.partition(":")
        harness = getattr(importlib.import_module(module), name)(task)
        return list(harness.cases("full"))
    except Exception:
        return []
    finally:  # the script may have built its inputs on the GPU: give the memory back
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            pass


# A performance script draws all its inputs at once, on the host: the candidate's child
# keeps two seeds' (the baseline's and the timing seed's), the reference's child one, and
# the judge the timed outputs of both. A case's bytes count its inputs and outputs; twice
# their sum bounded what one task held at its peak on the H100 host (fused_bmm_dropout_gelu:
# 36 GB of bytes, a 36 GB child).
HOST_COPIES = 2


def host_bytes(cases: list[Any]) -> float:
    """What judging one task may hold in host memory, from its timed cases' bytes."""
    return HOST_COPIES * sum(float(c.bytes or 0.0) for c in cases if c.timed)


def _host_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0.0


def next_fitting(queue: list[Any], need: dict[str, float], used: float, budget: float,
                 running: int) -> int | None:
    """Index of the first queued task whose host memory fits beside the running ones (any
    task when none runs; one whose need is infinite only then), or None."""
    for index, task in enumerate(queue):
        wanted = need.get(task.id, 0.0)
        if running == 0 or (math.isfinite(wanted) and (budget <= 0 or used + wanted <= budget)):
            return index
    return None


KILLED = "killed by SIGKILL"  # how the judge says a child ended for the kernel's OOM killer, most often


def judge_all(queue: list[Any], need: dict[str, float], budget: float, parallel: int, deadline: float,
              judge: Any, record: Any) -> list[Any]:
    """Judge the tasks of ``queue`` (``judge(task)`` -> (task, result, wall seconds), on
    ``parallel`` threads) as their host memory fits (:func:`next_fitting`), starting none
    after ``deadline`` (monotonic); ``record(task, result, wall)`` each as it ends. A task
    whose judgement ended with a child killed (``KILLED``) while others ran beside it is
    judged once more with nothing beside it, after the others, and only that second
    judgement recorded (fused_instance_norm_selu_conv2d's reference on a 251 GB host, two
    lanes of judgements on it). Returns the tasks not started."""
    need = dict(need)  # infinite for a task to judge again alone
    crowded: dict[str, bool] = {}
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="kbx") as pool:
        pending: dict[Future, Any] = {}
        used = 0.0
        while queue or pending:
            while queue and len(pending) < parallel and time.monotonic() < deadline:
                if any(not math.isfinite(need[t.id]) for t in pending.values()):
                    break  # one judged alone runs
                index = next_fitting(queue, need, used, budget, len(pending))
                if index is None:
                    break
                task = queue.pop(index)
                used += need[task.id] if math.isfinite(need[task.id]) else 0.0
                crowded[task.id] = bool(pending)
                for other in pending.values():
                    crowded[other.id] = True
                pending[pool.submit(judge, task)] = task
            if not pending:
                break
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in finished:
                del pending[future]
                task, result, wall = future.result()
                used -= need[task.id] if math.isfinite(need[task.id]) else 0.0
                if KILLED in (result.reason or "") and crowded.get(task.id) and math.isfinite(need[task.id]):
                    need[task.id] = math.inf
                    queue.append(task)
                    print(f"{task.category}/{task.id}: a child killed beside other judgements; "
                          "judged again alone, after the others", file=sys.stderr, flush=True)
                    continue
                record(task, result, wall)
    return queue


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.table:
        print(category_table(merged(args.table.split(","))))
        return 0
    try:
        shard, shards = (int(part) for part in args.shard.split("/"))
        if not 0 <= shard < shards:
            raise ValueError("K must be in 0..N-1")
    except ValueError as exc:
        print(f"--shard {args.shard}: give K/N, e.g. 1/2 ({exc})", file=sys.stderr)
        return 2
    if not args.data:
        print("--data: give the KernelBench-X checkout (or set GEAK_KERNELBENCHX_DATA)",
              file=sys.stderr)
        return 2
    from geak_core.api.errors import InputError
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions, option_flags
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite

    overrides = option_flags(args.evaluator_option, "--evaluator-option")
    try:
        suite = KernelBenchXSuite(KernelBenchXOptions(path=args.data))
        wanted = [t for t in args.tasks.split(",") if t]
        tasks = ([suite.get(t) for t in wanted] if wanted else suite.tasks())[shard::shards]
    except InputError as exc:
        print(f"--data {args.data} --tasks {args.tasks or '(all)'}: {exc}", file=sys.stderr)
        return 2
    # Every reference is expected correct against itself: timing is prepared up front, so
    # each task is checked and timed in one child (the judge's "auto" would check it in one
    # child first, then check and time it in a second, as it does for an agent's candidates).
    evaluator = TritonEvaluator(TritonEvaluatorOptions(**{
        "mode": args.mode, "workers": args.workers, "timeout_s": args.timeout,
        "reference_timeout_s": args.timeout, "prepare_timing": "up_front",
        "speedup_method": "sum",  # the benchmark's sum of latencies
        "reference_cache_mb": args.reference_cache_mb, **overrides}))
    started = time.monotonic()
    baselines = tempfile.mkdtemp(prefix="geak-kbx-baselines-")
    try:
        environment = _environment(evaluator, args, suite, overrides)
        data: dict[str, Any] = {"environment": environment, "tasks": []}
        if args.json_out and os.path.exists(args.json_out):
            with open(args.json_out, encoding="utf-8") as handle:
                previous = json.load(handle)
            before = previous.get("environment", {})
            if (before.get("device"), before.get("mode")) != (environment["device"],
                                                              environment["mode"]):
                print(f"{args.json_out} holds results of {before.get('device')} "
                      f"({before.get('mode')}); this is {environment['device']} "
                      f"({environment['mode']}): timings are per machine, use another file",
                      file=sys.stderr)
                return 2
            if before.get("evaluator_options", {}) != environment["evaluator_options"]:
                print(f"{args.json_out} holds results judged with --evaluator-option "
                      f"{before.get('evaluator_options', {})}; this run has "
                      f"{environment['evaluator_options']}: use another file", file=sys.stderr)
                return 2
            # a judge error is no verdict: judged again when asked
            data["tasks"] = [row for row in previous.get("tasks", [])
                             if not (args.retry_errors and "judge_error" in row.get("flags", []))]
        done = {row["task"] for row in data["tasks"]}
        todo = [t for t in tasks if t.id not in done]
        print(f"{len(done)} task(s) already judged, {len(todo)} to judge on "
              f"{environment['device']}", file=sys.stderr, flush=True)
        deadline = started + args.limit_s if args.limit_s > 0 else math.inf
        parallel = max(1, int(getattr(evaluator, "max_parallel", 1)))
        cases = {t.id: _cases(t) for t in todo}
        need = {t.id: host_bytes(cases[t.id]) for t in todo}
        budget = args.host_memory_gb * 1e9 if args.host_memory_gb > 0 else 0.6 * _host_memory()
        # tasks that need the host to themselves go last, so that they hold up no one
        todo.sort(key=lambda t: budget > 0 and need[t.id] > budget)

        def judge(task: Any) -> tuple[Any, Any, float]:
            began = time.monotonic()
            judged = bench_task_of(task, baselines)
            result = evaluator.evaluate(judged, Candidate(id="reference", task_id=task.id,
                                                          code=self_candidate(task)))
            return task, result, time.monotonic() - began

        def record(task: Any, result: Any, wall: float) -> None:
            row = row_of(suite, task, result, environment["device"],
                         {c.name: c.params for c in cases[task.id]}, wall)
            data["tasks"].append(row)
            print(f"{task.category}/{task.id}: correct={row['correct']} "
                  f"{row['wall_s']} s {row['reason'] or ''}"[:240],
                  file=sys.stderr, flush=True)
            if args.json_out:
                environment["total_s"] = round(time.monotonic() - started, 1)
                _write_json(args.json_out, data)

        left = judge_all(list(todo), need, budget, parallel, deadline, judge, record)
        if left:
            print(f"time limit: {len(left)} task(s) not started; run again to go on", file=sys.stderr)
    finally:
        evaluator.close()
        shutil.rmtree(baselines, ignore_errors=True)
    print(category_table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
