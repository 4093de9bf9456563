"""GPU timing, inside the candidate's process: baseline and candidate interleaved.

Order of events, chosen so the candidate has as little leverage as possible:

1. Before the candidate is imported, import the timing baseline (the task's
   reference, or its ``timing_baseline`` module: the original expert kernels,
   say) and compile/warm it on seed A under the reference's Triton cache
   (:meth:`Baseline.warm`, called by ``child.candidate``).
2. Switch Triton's cache directory to the candidates' cache, snapshot the
   identities of everything timing relies on (the baseline module and the
   harness included), import the candidate, verify them; run the correctness
   plan.
3. Handshake: only once the judge has found every run correct does it send
   the timing seed T, a secret drawn for timing alone (no correctness run used
   it, so outputs remembered from those runs are of no use), with ``prepare``:
   the child does the harness's host-side work for both sides' inputs
   (``Harness.prefetch``: a performance script draws its inputs on the CPU)
   and says ``prepared``; the judge then takes the device exclusively and says
   ``time`` (:func:`await_timing`), so host work never holds the device from
   other candidates. The candidate is timed on seed T's inputs and the
   baseline on seed A's; the candidate's last outputs go back to the judge,
   which compares them with the reference's outputs for seed T, computed in
   the (separate) reference process.
4. Per case: warm-up until ``warmup_ms`` (autotuning settles), then
   repetitions alternating baseline and candidate (the order flips every
   repetition). Each repetition gets fresh poisoned outputs
   (``harness.allocate``), a short GPU busy-wait (sized to the host's launch
   path as measured in the warm-up: :func:`hold_for`) and an
   L2/last-level-cache flush, then CUDA events around ``harness.run`` alone:
   the device is still busy when the host finishes launching, so the events
   see the kernel, not the host's launch overhead (which matters for kernels
   of a few microseconds). Repetitions stop once both medians are known to
   within the case's target (the distribution-free 95 % interval of a median,
   from order statistics; ``target_ci`` for the aggregate, looser for cases
   that weigh little in it: :meth:`Baseline.targets`), after at least
   ``min_repetitions``, or when the loop has run for ``rep_ms``. Both sides'
   inputs are drawn right before the case is timed.
5. Cross-check: a few more calls, each timed both by CUDA events and by a
   host clock that ends with a device-wide ``torch.cuda.synchronize()``.
   Launch overhead appears in both; work on another stream or thread only in
   the second. A candidate whose gap exceeds the baseline's is flagged and
   charged the synchronised time.
6. Every timed call must launch one of the candidate's own kernels; the
   identity snapshot and thread list are verified again after timing.
"""

from __future__ import annotations

import bisect
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from geak_evaluator_triton.child import (
    REFERENCE_MODULE,
    error_frame,
    import_file,
    make_inputs,
    prefetch,
    resolve_reference,
    to_host,
)

CHECK_EVERY = 8  # repetitions between two looks at the confidence interval
LATER_WARMUP_SHARE = 0.25  # of warmup_ms, for every case after the phase's first
MIN_WARMUP_CALLS = 3  # per side and case, after the first call
MAX_CASE_CI = 0.05  # the loosest precision asked of any one case
CROSS_CHECK_CALLS = 5
HOLD_MARGIN = 1.5  # the busy-wait over one call's host time (see hold_for)
MAX_HOLD_US = 5000.0


def set_cache_dir(path: str) -> None:
    import triton

    os.makedirs(path, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        triton.knobs.cache.dir = path
    except AttributeError:
        pass


@dataclass
class Baseline:
    """The module timed against the candidate, warmed on its own inputs (seed A)."""

    module: Any
    cases: list[Any]
    inputs: dict[str, Any]
    seed: int = 0
    estimate_ms: dict[str, float] = field(default_factory=dict)  # one call per case, after the warm-up

    @classmethod
    def warm(cls, task: Any, harness: Any, cases: list[Any], seed: int) -> Baseline:
        import torch

        path = task.timing_baseline or resolve_reference(task, harness)
        module = import_file(REFERENCE_MODULE, path)
        inputs = {}
        estimates = {}
        for case in cases:
            inputs[case.name] = make_inputs(harness, task, case, seed, "stage1")
            outputs = harness.allocate(case, inputs[case.name])
            harness.run(module, case, inputs[case.name], outputs)  # compiles, autotunes
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            harness.run(module, case, inputs[case.name], harness.allocate(case, inputs[case.name]))
            end.record()
            end.synchronize()
            estimates[case.name] = max(start.elapsed_time(end), 1e-6)
        torch.cuda.synchronize()
        return cls(module, cases, inputs, seed, estimates)

    def targets(self, target: float, weighting: str) -> dict[str, float]:
        """Each case's precision target, so that the aggregate speedup is known to ``target``.

        The aggregate's relative error is about sqrt(sum (w_i * e_i)^2) for case
        weights w_i (a case's share of the baseline's total time for a sum of
        latencies, 1/n each for a geometric mean) and per-case errors e_i;
        e_i = target / sqrt(w_i) keeps it within ``target`` (sum w_i = 1)
        while a case that is 1 % of the total needs only a tenth of the
        precision. Capped at 5 %.
        """
        names = [c.name for c in self.cases]
        if not target or not names:
            return {name: target for name in names}
        if weighting == "sum":
            total = sum(self.estimate_ms.get(n, 0.0) for n in names) or 1.0
            weights = {n: self.estimate_ms.get(n, 0.0) / total for n in names}
        else:
            weights = {n: 1.0 / len(names) for n in names}
        return {n: min(MAX_CASE_CI, target / math.sqrt(max(weights[n], 1e-6))) for n in names}


def await_timing(channel: Any, harness: Any, baseline: Baseline) -> int | None:
    """After ``checked``: the timing seed once the judge holds the device, or None (abort).

    The judge first answers ``{"prepare": {"seed": T}}`` while the device is not yet
    held: both sides' inputs are prefetched here and the child says ``prepared``; then
    ``{"time": {"seed": T}}`` once the judge holds the device exclusively.
    """
    answer = channel.receive()
    if answer.get("abort"):
        return None
    if "prepare" in answer:
        seed = int(answer["prepare"]["seed"])
        began = time.perf_counter()
        for case in baseline.cases:
            prefetch(harness, case, baseline.seed)
            prefetch(harness, case, seed)
        channel.send({"kind": "prepared", "prepare_s": round(time.perf_counter() - began, 4)})
        answer = channel.receive()
        if answer.get("abort"):
            return None
    return int(answer["time"]["seed"])


def time_cases(channel: Any, task: Any, harness: Any, baseline: Baseline, module: Any, guard: Any,
               log: Any, options: dict[str, Any], seed: int, hide: dict[str, str]) -> bool:
    """Time every case of ``baseline``; one ``timing`` frame per case."""
    import torch

    flush = None
    if options["l2_flush"]:
        flush = torch.empty(int(options["flush_bytes"]) // 4, dtype=torch.int32, device="cuda")
    queue_ahead = float(options.get("queue_ahead_us", 0.0))
    options = {**options, "cycles_per_us": _cycles_per_us() if queue_ahead > 0 else 0.0}
    targets = baseline.targets(float(options.get("target_ci", 0.0) or 0.0), str(options.get("weighting", "sum")))
    timed: list[tuple[str, Any]] = []  # (case, last timed outputs, on the host)
    ok = True
    for index, case in enumerate(baseline.cases):
        try:
            # Both sides' inputs drawn now, one after the other, so neither side's buffers sit
            # where the device's memory was laid out differently (the baseline's warm-up
            # inputs were allocated before the candidate was even imported).
            ref_inputs = make_inputs(harness, task, case, baseline.seed, "stage1")
            cand_inputs = make_inputs(harness, task, case, seed, "stage1")
            case_options = {**options, "target_ci": targets[case.name],
                            "warmup_ms": warmup_for(float(options["warmup_ms"]), index)}
            record = _time_case(harness, case, baseline.module, module, ref_inputs,
                                cand_inputs, case_options, flush, guard, log)
            timed.append((case.name, to_host(record.pop("outputs"))))
        except Exception as exc:
            channel.send(error_frame("error", exc, hide, stage="timing", case=case.name, seed=seed))
            ok = False
            break
        record["violations"] = guard.violations()
        channel.send({"kind": "timing", "case": case.name, "seed": seed, **record})
        del cand_inputs, ref_inputs
        torch.cuda.empty_cache()
    # The device is no longer needed: the judge lets the next candidate time while the
    # outputs travel (they were copied to the host inside the exclusive hold).
    torch.cuda.synchronize()
    channel.send({"kind": "timed"})
    for name, outputs in timed:
        channel.send({"kind": "timing_outputs", "case": name, "seed": seed, "outputs": outputs})
    return ok


def _time_case(
    harness: Any, case: Any, reference: Any, candidate: Any, ref_inputs: Any, cand_inputs: Any,
    options: dict[str, Any], flush: Any, guard: Any, log: Any,
) -> dict[str, Any]:
    import torch

    sides = {"reference": (reference, ref_inputs), "candidate": (candidate, cand_inputs)}

    def call(side: str) -> tuple[Any, int]:
        module, inputs = sides[side]
        outputs = harness.allocate(case, inputs)
        mark = log.mark()
        harness.run(module, case, inputs, outputs)
        own = sum(1 for _, path, _ in log.since(mark) if path == guard.files["candidate"])
        return outputs, own

    began = time.perf_counter()
    # Warm-up: the first call compiles and autotunes; keep calling until warmup_ms has passed
    # (shorter after the phase's first case: see warmup_for). Each later call's host time
    # (allocating, launching) sizes the busy-wait below.
    host_us: dict[str, list[float]] = {side: [] for side in sides}
    for side in sides:
        call(side)
        torch.cuda.synchronize()
        start = time.perf_counter()
        calls = 0
        while True:
            before = time.perf_counter()
            call(side)
            host_us[side].append((time.perf_counter() - before) * 1e6)
            torch.cuda.synchronize()
            calls += 1
            elapsed = (time.perf_counter() - start) * 1e3
            if elapsed >= options["warmup_ms"] and calls >= MIN_WARMUP_CALLS:
                break
    launch_us = max(statistics.median(times) for times in host_us.values())
    hold_us = hold_for(launch_us, float(options.get("queue_ahead_us", 0.0)))
    hold_cycles = int(float(options.get("cycles_per_us", 0.0)) * hold_us)
    fixed = int(options["repetitions"]) > 0
    limit = int(options["repetitions"]) if fixed else int(options["max_repetitions"])
    target = float(options.get("target_ci", 0.0) or 0.0)
    budget_s = float(options["rep_ms"]) / 1e3

    events = {side: Latencies() for side in sides}
    zero_launch_calls = 0
    last_outputs = None
    loop_started = time.perf_counter()
    reps = 0
    for rep in range(limit):
        reps = rep + 1
        order = ("reference", "candidate") if rep % 2 == 0 else ("candidate", "reference")
        for side in order:
            module, inputs = sides[side]
            outputs = harness.allocate(case, inputs)
            if hold_cycles:
                torch.cuda._sleep(hold_cycles)
            if flush is not None:
                flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            mark = log.mark()
            start.record()
            harness.run(module, case, inputs, outputs)
            end.record()
            events[side].add(start, end)
            if side == "candidate":
                own = sum(1 for _, path, _ in log.since(mark) if path == guard.files["candidate"])
                zero_launch_calls += own == 0
                last_outputs = outputs
        if fixed or reps < options["min_repetitions"]:
            if reps % 32 == 0:
                torch.cuda.synchronize()
            continue
        if reps % CHECK_EVERY == 0 or time.perf_counter() - loop_started >= budget_s:
            torch.cuda.synchronize()
            if time.perf_counter() - loop_started >= budget_s:
                break
            if target > 0 and all(median_interval(latencies.collect()) <= target
                                  for latencies in events.values()):
                break
    torch.cuda.synchronize()
    times = {side: latencies.collect() for side, latencies in events.items()}
    looped = time.perf_counter()

    # Cross-check: per call, CUDA events on the current stream and a host clock that waits
    # for the whole device. Both include the same launch overhead; only work the events
    # cannot see (another stream, another thread) widens the gap between them.
    gaps: dict[str, list[float]] = {side: [] for side in sides}
    synced: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(max(3, min(reps, CROSS_CHECK_CALLS))):
        for side in sides:
            module, inputs = sides[side]
            outputs = harness.allocate(case, inputs)
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin = time.perf_counter()
            start.record()
            harness.run(module, case, inputs, outputs)
            end.record()
            torch.cuda.synchronize()
            wall_ms = (time.perf_counter() - begin) * 1e3
            synced[side].append(wall_ms)
            gaps[side].append(wall_ms - start.elapsed_time(end))

    return {
        "repetitions": reps,
        "target_ci": target,
        "launch_us": round(launch_us, 1),
        "hold_us": round(hold_us if hold_cycles else 0.0, 1),
        "wall_s": {"warmup": round(loop_started - began, 4), "loop": round(looped - loop_started, 4),
                   "cross_check": round(time.perf_counter() - looped, 4)},
        "reference_ms": statistics.median(times["reference"]),
        "candidate_ms": statistics.median(times["candidate"]),
        "reference_spread": _spread(times["reference"]),
        "candidate_spread": _spread(times["candidate"]),
        "reference_ci": _finite(median_interval(times["reference"])),
        "candidate_ci": _finite(median_interval(times["candidate"])),
        "reference_gap_ms": statistics.median(gaps["reference"]),
        "candidate_gap_ms": statistics.median(gaps["candidate"]),
        "candidate_synced_ms": statistics.median(synced["candidate"]),
        "zero_launch_calls": zero_launch_calls,
        "outputs": last_outputs,
    }


class Latencies:
    """One side's timed calls: CUDA event pairs, each read once, kept sorted.

    The loop looks at the median's interval every CHECK_EVERY repetitions, right after
    a device synchronisation; only the pairs recorded since the last look are read
    then (reading every pair at every look costs a few microseconds a pair: for a case
    of 600 repetitions, about a third of its loop).
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Any, Any]] = []
        self._sorted: list[float] = []

    def add(self, start: Any, end: Any) -> None:
        self._pending.append((start, end))

    def collect(self) -> list[float]:
        """Every latency so far, in milliseconds, ascending (the events must be complete)."""
        for start, end in self._pending:
            bisect.insort(self._sorted, start.elapsed_time(end))
        self._pending.clear()
        return self._sorted


def warmup_for(warmup_ms: float, index: int) -> float:
    """The warm-up per side of the phase's ``index``-th case: ``warmup_ms`` for the first,
    when the device may come from idle clocks; LATER_WARMUP_SHARE of it for the others,
    which follow timed calls with the device held all along (their first call still
    compiles and autotunes, and at least MIN_WARMUP_CALLS more follow it)."""
    return warmup_ms if index == 0 else warmup_ms * LATER_WARMUP_SHARE


def hold_for(launch_us: float, queue_ahead_us: float) -> float:
    """The busy-wait queued before each timed call, in microseconds (0: none).

    It has to outlast the host's path from queuing it to queuing the kernel, so
    that the start event executes only after the launch is queued: a kernel
    shorter than its own launch path is then timed without the launch overhead,
    the same for both sides. That path is about one call's host time
    (``launch_us``, the larger side's median in the warm-up); the busy-wait is
    HOLD_MARGIN times that, and at least ``queue_ahead_us``; the cache flush,
    queued after it, adds its own time to the margin. ``queue_ahead_us`` = 0
    turns it off. Every microsecond of it is device time spent per timed call,
    so it is no longer than it needs to be.
    """
    if queue_ahead_us <= 0:
        return 0.0
    return min(MAX_HOLD_US, max(queue_ahead_us, HOLD_MARGIN * launch_us))


def _cycles_per_us() -> float:
    """GPU clock cycles of ``torch.cuda._sleep`` per microsecond, measured with CUDA events
    (0.0 where the busy-wait kernel is missing)."""
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return 0.0
    probe = 1_000_000
    sleep(probe // 10)  # first call loads the kernel
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(probe)
    end.record()
    torch.cuda.synchronize()
    elapsed_us = start.elapsed_time(end) * 1e3
    return probe / elapsed_us if elapsed_us > 0 else 0.0


def _spread(values: list[float]) -> list[float]:
    ordered = sorted(values)
    if len(ordered) < 4:
        return [ordered[0], ordered[-1]]
    q = statistics.quantiles(ordered, n=5)
    return [q[0], q[-1]]  # 20th and 80th percentiles


def median_interval(ordered: list[float]) -> float:
    """Half-width of the distribution-free 95 % interval of the median, relative to it.

    For n sorted samples the interval runs from the j-th to the k-th value with
    j, k = (n -/+ 1.96 sqrt(n)) / 2 (the binomial order-statistic bound); below
    six samples no such interval exists and the answer is infinite.
    """
    n = len(ordered)
    if n < 6:
        return math.inf
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    median = statistics.median(ordered)
    if median <= 0:
        return math.inf
    return (ordered[hi] - ordered[lo]) / 2 / median


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
