"""GPU timing child: reference and candidate timed interleaved in one process.

Order of events, chosen so the candidate has as little leverage as possible:

1. Import the harness and the reference and compile/warm the reference on
   seed A under the reference's Triton cache, *before* the candidate exists.
2. Switch Triton's cache directory to the candidates' cache, snapshot the
   identities of everything timing relies on (the reference module and the
   harness included), import the candidate, verify them.
3. Handshake: only now does the judge send seed B. The candidate is timed on
   seed B's inputs and the reference on seed A's, so copying the reference's
   outputs from this process gives wrong answers; the candidate's last
   outputs go back to the judge, which compares them with the reference
   outputs for seed B computed in the (separate) reference process.
4. Per case: warm-up until ``warmup_ms`` (autotuning settles), then
   repetitions alternating reference and candidate (the order flips every
   repetition). Each repetition gets fresh poisoned outputs
   (``harness.allocate``), a short GPU busy-wait (``queue_ahead_us``) and an
   L2/last-level-cache flush, then CUDA events around ``harness.run`` alone:
   the device is still busy when the host finishes launching, so the events
   see the kernel, not the host's launch overhead (which matters for kernels
   of a few microseconds).
5. Cross-check: a few more calls, each timed both by CUDA events and by a
   host clock that ends with a device-wide ``torch.cuda.synchronize()``.
   Launch overhead appears in both; work on another stream or thread only in
   the second. A candidate whose gap exceeds the reference's is flagged and
   charged the synchronised time.
6. Every timed call must launch one of the candidate's own kernels; the
   identity snapshot and thread list are verified again after timing.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from geak_evaluator_triton.child import (
    REFERENCE_MODULE,
    _case_table,
    error_frame,
    import_file,
    load_harness,
    load_task,
    make_inputs,
    prepare_candidate,
    resolve_reference,
    setup_runtime,
)


def _set_cache_dir(path: str) -> None:
    import triton

    os.makedirs(path, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = path
    try:
        triton.knobs.cache.dir = path
    except AttributeError:
        pass


def time_candidate(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    import torch

    log = setup_runtime()
    task = load_task(args["task"])
    options = args["timing"]
    try:
        harness = load_harness(task)
        table = {c.name: c for c in _case_table(harness, args["case_set"])}
        cases = [table[name] for name in args["cases"]]
        reference = import_file(REFERENCE_MODULE, resolve_reference(task, harness))
    except Exception as exc:
        channel.send(error_frame("setup_error", exc))
        return {"ok": False}

    ref_seed = args["reference_seed"]
    ref_inputs = {}
    try:
        for case in cases:
            ref_inputs[case.name] = make_inputs(harness, task, case, ref_seed, "stage1")
            outputs = harness.allocate(case, ref_inputs[case.name])
            harness.run(reference, case, ref_inputs[case.name], outputs)
        torch.cuda.synchronize()
    except Exception as exc:
        channel.send(error_frame("setup_error", exc, where="reference warm-up"))
        return {"ok": False}

    _set_cache_dir(args["candidate_cache"])
    module, guard, frame = prepare_candidate(task, args["code"], harness, log,
                                             extra_watch={"reference": reference})
    channel.send(frame)
    if module is None or frame["contract"] or frame["violations"]:
        return {"ok": False}
    plan = channel.receive()
    if plan.get("abort"):
        return {"ok": False}
    cand_seed = plan["seed"]
    hide = {guard.files["candidate"]: "candidate.py"}
    flush = None
    if options["l2_flush"]:
        flush = torch.empty(int(options["flush_bytes"]) // 4, dtype=torch.int32, device="cuda")
    options = {**options, "hold_cycles": _hold_cycles(float(options.get("queue_ahead_us", 0.0)))}

    for case in cases:
        try:
            cand_inputs = make_inputs(harness, task, case, cand_seed, "stage1")
            record = _time_case(harness, case, reference, module, ref_inputs[case.name], cand_inputs,
                                options, flush, guard, log)
        except Exception as exc:
            channel.send(error_frame("error", exc, hide, stage="timing", case=case.name, seed=cand_seed))
            return {"ok": False}
        record["violations"] = guard.violations()
        channel.send({"kind": "timing", "case": case.name, "seed": cand_seed, **record})
        del cand_inputs
        torch.cuda.empty_cache()
    return {"ok": True}


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

    # Warm-up: the first call compiles and autotunes; keep calling until warmup_ms has passed.
    estimates = {}
    for side in sides:
        call(side)
        torch.cuda.synchronize()
        start = time.perf_counter()
        calls = 0
        while True:
            call(side)
            torch.cuda.synchronize()
            calls += 1
            elapsed = (time.perf_counter() - start) * 1e3
            if elapsed >= options["warmup_ms"] and calls >= 2:
                break
        estimates[side] = elapsed / calls
    if options["repetitions"] > 0:
        reps = int(options["repetitions"])
    else:
        per_call = max(max(estimates.values()), 1e-3)
        reps = int(options["rep_ms"] / per_call)
        reps = max(options["min_repetitions"], min(options["max_repetitions"], reps))

    events: dict[str, list[tuple[Any, Any]]] = {side: [] for side in sides}
    zero_launch_calls = 0
    last_outputs = None
    for rep in range(reps):
        order = ("reference", "candidate") if rep % 2 == 0 else ("candidate", "reference")
        for side in order:
            module, inputs = sides[side]
            outputs = harness.allocate(case, inputs)
            if options["hold_cycles"]:
                torch.cuda._sleep(options["hold_cycles"])
            if flush is not None:
                flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            mark = log.mark()
            start.record()
            harness.run(module, case, inputs, outputs)
            end.record()
            events[side].append((start, end))
            if side == "candidate":
                own = sum(1 for _, path, _ in log.since(mark) if path == guard.files["candidate"])
                zero_launch_calls += own == 0
                last_outputs = outputs
        if rep % 32 == 31:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    times = {side: [s.elapsed_time(e) for s, e in pairs] for side, pairs in events.items()}

    # Cross-check: per call, CUDA events on the current stream and a host clock that waits
    # for the whole device. Both include the same launch overhead; only work the events
    # cannot see (another stream, another thread) widens the gap between them.
    gaps: dict[str, list[float]] = {side: [] for side in sides}
    synced: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(max(3, min(reps, 20))):
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
        "reference_ms": statistics.median(times["reference"]),
        "candidate_ms": statistics.median(times["candidate"]),
        "reference_spread": _spread(times["reference"]),
        "candidate_spread": _spread(times["candidate"]),
        "reference_gap_ms": statistics.median(gaps["reference"]),
        "candidate_gap_ms": statistics.median(gaps["candidate"]),
        "candidate_synced_ms": statistics.median(synced["candidate"]),
        "zero_launch_calls": zero_launch_calls,
        "outputs": last_outputs,
    }


def _hold_cycles(microseconds: float) -> int:
    """GPU clock cycles that keep the device busy for ``microseconds`` (0: no hold).

    Queued ahead of each timed call, the hold lets the host finish launching
    the kernel before the start event executes, so a kernel shorter than its
    own launch path is timed without the host's launch overhead, the same for
    both sides. Calibrated once per process with CUDA events.
    """
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if microseconds <= 0 or sleep is None:
        return 0
    probe = 1_000_000
    sleep(probe // 10)  # first call loads the kernel
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(probe)
    end.record()
    torch.cuda.synchronize()
    elapsed_us = start.elapsed_time(end) * 1e3
    if elapsed_us <= 0:
        return 0
    return max(1, int(probe * microseconds / elapsed_us))


def _spread(values: list[float]) -> list[float]:
    ordered = sorted(values)
    if len(ordered) < 4:
        return [ordered[0], ordered[-1]]
    q = statistics.quantiles(ordered, n=5)
    return [q[0], q[-1]]  # 20th and 80th percentiles
