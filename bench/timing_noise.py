"""How the judge's timed loop spends its time, and how the cache flush shapes the noise.

For each timed case of the given rocm tasks, the task's reference is timed against itself
(two sides on inputs of different seeds, interleaved, order flipped every repetition)
with the judge's own loop: fresh poisoned outputs, the busy-wait sized by ``hold_for``, a
cache flush, CUDA events around ``harness.run``. Only the flush differs between variants:

* ``write``: the judge's flush, ``zero_()`` of a buffer twice the profile's caches (the
  caches are left full of dirty lines, which the timed kernel's loads write back);
* ``read``: the same buffer read (a sum), leaving the caches full of clean lines;
* ``none``: no flush (warm caches);
* ``tight``: the judge's flush with a busy-wait shorter by the flush's least possible
  duration (its bytes at the profile's peak bandwidth): the flush runs after the busy-wait
  and before the start event, so it covers that much of the host's launch path too. If
  the busy-wait is then too short, the events take in launch latency and the medians
  rise above ``write``'s.

Per case and variant: the two medians and their ratio (ideally 1), the 20th-80th
percentile spread, the repetitions after which both medians' 95 % intervals first were
within ``--target`` (the judge checks every 8), the interval after all ``--reps``, the
host time of one call, and the loop's wall time per repetition. Also what collecting every
event's elapsed time once costs (the judge's interval check did that at every look).

This runs trusted reference code in this process; it is a measurement, not a verdict.

    python bench/timing_noise.py --tasks test_add_kernel,test_gemm_no_scf --json noise.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from geak_core.engine.store import atomic_write

VARIANTS = ("write", "read", "none", "tight")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="test_add_kernel,test_gemm_no_scf,test_flashattention_fwd")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--reps", type=int, default=600, help="repetitions per side, case and variant")
    parser.add_argument("--budget-s", type=float, default=1.5,
                        help="at most this long per case and variant (fewer repetitions then)")
    parser.add_argument("--target", type=float, default=0.01, help="the median interval to reach")
    parser.add_argument("--raw", action="store_true", help="keep every repetition's two latencies")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: every timed case)")
    parser.add_argument("--json", dest="json_out", default="")
    return parser.parse_args(argv)


def _profile() -> Any:
    """The hardware profile the judge would match to this device (None: none matched)."""
    import torch
    from geak_core.engine.hardware import match_profile
    from geak_core.engine.plugins import get_plugin_manager

    profiles = [spec.build(None) for spec in get_plugin_manager().components("hardware_profile").values()]
    props = torch.cuda.get_device_properties(0)
    return match_profile(profiles, props.name, getattr(props, "gcnArchName", "") or "")


def first_within(times: dict[str, list[float]], target: float, every: int = 8, start: int = 16) -> int | None:
    """The first repetition count (a multiple of ``every``) at which both sides' median
    intervals were within ``target``; None if never."""
    from geak_evaluator_triton.timed_calls import median_interval

    n = min(len(v) for v in times.values())
    for reps in range(start, n + 1, every):
        if all(median_interval(sorted(v[:reps])) <= target for v in times.values()):
            return reps
    return None


def time_case(harness: Any, task: Any, module: Any, case: Any, variant: str, flush: Any,
              args: argparse.Namespace, flush_min_us: float) -> dict[str, Any]:
    import torch
    from geak_evaluator_triton.child_jobs import make_inputs
    from geak_evaluator_triton.timed_calls import cycles_per_us, hold_for, median_interval
    from geak_evaluator_triton.timing_loop import spread

    sides = {"a": make_inputs(harness, task, case, 11, "stage1"), "b": make_inputs(harness, task, case, 12, "stage1")}
    host_us: dict[str, list[float]] = {s: [] for s in sides}
    for side, inputs in sides.items():  # warm-up: 10 ms per side, as the judge's first case
        harness.run(module, case, inputs, harness.allocate(case, inputs))
        torch.cuda.synchronize()
        began = time.perf_counter()
        while time.perf_counter() - began < 0.01 or len(host_us[side]) < 2:
            before = time.perf_counter()
            harness.run(module, case, inputs, harness.allocate(case, inputs))
            host_us[side].append((time.perf_counter() - before) * 1e6)
            torch.cuda.synchronize()
    launch_us = max(statistics.median(v) for v in host_us.values())
    hold_us = hold_for(launch_us, 10.0)
    if variant == "tight":
        hold_us = max(10.0, hold_us - flush_min_us)
    hold_cycles = int(cycles_per_us() * hold_us)
    events: dict[str, list[tuple[Any, Any]]] = {s: [] for s in sides}
    began = time.perf_counter()
    reps = 0
    for rep in range(args.reps):
        reps = rep + 1
        for side in (("a", "b") if rep % 2 == 0 else ("b", "a")):
            inputs = sides[side]
            outputs = harness.allocate(case, inputs)
            torch.cuda._sleep(hold_cycles)
            if variant in ("write", "tight"):
                flush.zero_()
            elif variant == "read":
                flush.sum()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            harness.run(module, case, inputs, outputs)
            end.record()
            events[side].append((start, end))
        if reps % 8 == 0:
            torch.cuda.synchronize()
            if time.perf_counter() - began >= args.budget_s:
                break
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - began
    collect = time.perf_counter()
    times = {side: [s.elapsed_time(e) for s, e in pairs] for side, pairs in events.items()}
    collect_us = (time.perf_counter() - collect) * 1e6 / max(1, sum(len(v) for v in times.values()))
    medians = {side: statistics.median(v) for side, v in times.items()}
    raw = {"raw": times} if args.raw else {}
    return {
        "case": case.name,
        "variant": variant,
        "repetitions": reps,
        "a_ms": medians["a"],
        "b_ms": medians["b"],
        "ratio": medians["a"] / medians["b"] if medians["b"] > 0 else None,
        "spread_20_80": [round(x / medians["a"], 4) for x in spread(times["a"])],
        "interval": max(median_interval(sorted(v)) for v in times.values()),
        "reps_to_target": first_within(times, args.target),
        "launch_us": round(launch_us, 1),
        "hold_cycles": hold_cycles,
        "wall_us_per_rep": round(loop_s * 1e6 / reps, 1),
        "elapsed_time_us_each": round(collect_us, 2),
        **raw,
    }


def bench_task(task: Any, args: argparse.Namespace, flush: Any, flush_min_us: float,
               write: Any) -> list[dict[str, Any]]:
    import torch
    from geak_core.api.tasks import DeviceInfo, unmet_requirement
    from geak_evaluator_triton.child_jobs import (
        REFERENCE_MODULE,
        import_file,
        load_harness,
        resolve_reference,
    )

    harness = load_harness(task)
    module = import_file(REFERENCE_MODULE + "_" + task.id, resolve_reference(task, harness))
    device = DeviceInfo.detect()
    rows = []
    wanted = set(filter(None, args.cases.split(",")))
    for case in harness.cases("full"):
        if not case.timed or any(unmet_requirement(r, device) for r in case.requires):
            continue
        if wanted and case.name not in wanted:
            continue
        for variant in args.variants.split(","):
            row = {"task": task.id, **time_case(harness, task, module, case, variant, flush, args, flush_min_us)}
            rows.append(row)
            write(row)
            print(json.dumps({k: v for k, v in row.items() if k != "raw"}), flush=True)
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    import torch
    from geak_suite_rocm.suite import RocmSuite

    if not torch.cuda.is_available():
        print("timing_noise needs a GPU", file=sys.stderr)
        return 2
    profile = _profile()
    cache_mib = (profile.l2_cache_mib + profile.last_level_cache_mib) if profile else 128.0
    flush = torch.empty(int(2 * cache_mib * 1024 * 1024) // 4, dtype=torch.int32, device="cuda")
    # the flush's least duration: its bytes written at the profile's peak bandwidth
    flush_min_us = flush.numel() * 4 / (profile.peak_bandwidth_gbs * 1e3) if profile else 0.0
    tasks = {t.id: t for t in RocmSuite().tasks()}
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "flush_mib": round(2 * cache_mib, 1),
                           "flush_min_us": round(flush_min_us, 1), "target": args.target, "rows": []}

    def write(row: dict[str, Any]) -> None:
        out["rows"].append(row)
        if args.json_out:
            atomic_write(args.json_out, json.dumps(out, indent=1), fsync=False)

    for task_id in args.tasks.split(","):
        bench_task(tasks[task_id], args, flush, flush_min_us, write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
