"""Does where a side runs change its measured latency? One kernel timed against itself.

The judge times the baseline in its trusted timer child and the candidate in the
candidate's child, two processes sharing the device, the candidate's process group
stopped while the baseline runs (``timing_loop``). A reference judged against itself
read 5-11 % faster than the baseline on 4-5 us kernels (H200), while the same loop
with both sides in one process read 0-6 % faster. This bench takes the judge out of
it: a plain Triton add kernel on four sizes, timed against itself with the judge's
own loop (``timing_loop.time_case`` over ``timed_calls.TimedSide``), every side in a
spawned worker process of this script, in these arrangements:

* ``two``: a side per worker, the other worker's side paused (SIGSTOP of its
  process) while the baseline's blocks run, as the judge pauses a candidate;
* ``two_unpaused``: nothing paused;
* ``two_swapped``: the later-started worker is the baseline;
* ``two_busy_host``: the other side spends 100 us of host time in each call's
  allocation (the judge's candidate side does more host work per call than the timer);
* ``two_sampled``: the other side gathers samples of every call's outputs (as the
  judge's candidate side does), the baseline does not;
* ``two_both_sampled``: both sides gather samples (as the judge's timer does since
  the H200 figures of 2026-11-26 below).

On an H200 (2026-11-26, 4 rounds): ``two`` read 0.997-1.009, ``two_sampled``
1.058, 1.037, 1.030 and 1.005 on the four sizes (every round above 1.01 on the three
small ones), whatever the pacing of the calls (a variant that queued each call's
busy-wait behind the previous call's checks, so no device idled between calls, read
the same): the gathers behind a call make the side's microsecond kernels read about
0.2 us faster.

Per arrangement and size, medians over ``--rounds``: the other side's speedup over the
baseline (baseline median / other median; ideally 1.000), both medians in microseconds,
their 95 % intervals, each side's host time and device span per call, the busy-wait,
late calls, repetitions and the loop's seconds. Writes ``--json`` after every arrangement.

    python bench/timing_sides.py --json sides.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import statistics
import sys
import time
from typing import Any

import triton
import triton.language as tl
from geak_core.engine.store import atomic_write

SIZES = (4096, 98432, 1 << 20, 1 << 24)
WORKERS = {  # started in this order: (host microseconds spent per call before its launch, samples)
    "plain": (0.0, False),
    "plain2": (0.0, False),
    "busy": (100.0, False),
    "sampled": (0.0, True),
    "sampled2": (0.0, True),
}
ARRANGEMENTS = {  # name: (baseline's worker, other's worker, other paused)
    "two": ("plain", "plain2", True),
    "two_unpaused": ("plain", "plain2", False),
    "two_swapped": ("plain2", "plain", True),
    "two_busy_host": ("plain", "busy", True),
    "two_sampled": ("plain", "sampled", True),
    "two_both_sampled": ("sampled2", "sampled", True),
}


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


class Case:
    def __init__(self, n: int) -> None:
        self.name = f"add-{n}"
        self.n = n


class Harness:
    """What ``TimedSide`` asks of a harness, for the add kernel; ``busy_us`` of host time
    spent in each allocation (before the call's launch path)."""

    def __init__(self, busy_us: float = 0.0) -> None:
        self.busy_us = busy_us

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        generator = torch.Generator(device="cuda").manual_seed(seed)
        return {name: torch.randn(case.n, device="cuda", generator=generator) for name in ("x", "y")}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        if self.busy_us:
            until = time.perf_counter() + self.busy_us / 1e6
            while time.perf_counter() < until:
                pass
        return {"out": torch.full((case.n,), float("nan"), device="cuda")}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        block = 1024
        _add[(triton.cdiv(case.n, block),)](inputs["x"], inputs["y"], outputs["out"], case.n, BLOCK=block)


class _Task:
    outliers = None


def worker(conn: Any, busy_us: float, sample: bool) -> None:
    """Serve one side: ``start`` (a case), ``block``, ``end``."""
    import torch
    from geak_evaluator_triton.timed_calls import TimedSide, cycles_per_us

    flush_bytes = 2 * torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
    side = TimedSide(Harness(busy_us), None, flush, cycles_per_us(), sample=sample, keep_samples=False)
    cases = {f"add-{n}": Case(n) for n in SIZES}

    def end(payload: dict[str, Any]) -> dict[str, Any]:
        side.inputs = None
        return {}

    conn.send({"ready": True})
    serve_pipe(conn, {
        "start": lambda p: side.start_case(_Task(), cases[p["case"]], p["seed"], p["warmup_ms"]),
        "block": lambda p: side.block(p["calls"], p["hold_us"]),
        "end": end,
    })


def serve_pipe(conn: Any, handlers: dict[str, Any]) -> None:
    """A worker's loop: answer each ``(command, payload)`` from ``conn`` with
    ``handlers[command](payload)`` until ``exit``; a handler that raises, or a command
    without one, is answered ``{"error": ...}`` (the bench reports it) and the loop goes on."""
    while True:
        command, payload = conn.recv()
        if command == "exit":
            return
        try:
            if command not in handlers:
                raise ValueError(command)
            answer = handlers[command](payload)
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        conn.send(answer)


def stop_workers(workers: list[tuple[Any, Any]], join_s: float) -> None:
    """End ``(process, conn)`` workers: each let go on if paused, told ``exit``, waited for up
    to ``join_s`` seconds."""
    for process, conn in workers:
        try:
            os.kill(process.pid, signal.SIGCONT)
            conn.send(("exit", {}))
        except OSError:
            pass
        process.join(timeout=join_s)


class _Remote:
    """A side in a worker process; ``untrusted`` or ``stoppable``: paused (SIGSTOP) while the
    other side runs (the judge's baseline under ``pause_baseline``)."""

    def __init__(self, process: Any, conn: Any, untrusted: bool, stoppable: bool = False) -> None:
        self.process, self.conn, self.untrusted = process, conn, untrusted
        self.stoppable = untrusted or stoppable

    def _ask(self, command: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.conn.send((command, payload))
        answer = self.conn.recv()
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def start_case(self, case: str, seed: int, warmup_ms: float) -> dict[str, Any]:
        return self._ask("start", {"case": case, "seed": seed, "warmup_ms": warmup_ms})

    def block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]:
        return self._ask("block", {"calls": calls, "hold_us": hold_us})

    def end_case(self) -> dict[str, Any]:
        return self._ask("end", {})

    def pause(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    found = {"speedup": record["reference_ms"] / record["candidate_ms"],
             "baseline_us": record["reference_ms"] * 1e3, "other_us": record["candidate_ms"] * 1e3,
             "baseline_ci": record["reference_ci"], "other_ci": record["candidate_ci"],
             "repetitions": record["repetitions"], "hold_us": record["hold_us"],
             "lengthened": record["holds_lengthened"], "loop_s": record["wall_s"]["loop"]}
    for name, tally in record["tallies"].items():  # per call: the child's host time, the device's span
        calls = max(1, tally.calls)
        found[f"{name}_host_us"] = tally.child_s / calls * 1e6
        found[f"{name}_device_us"] = tally.device_s / calls * 1e6
        found[f"{name}_late"] = tally.late
    return found


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--arrangements", default=",".join(ARRANGEMENTS))
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    from geak_evaluator_triton.timing_loop import time_case

    options = {"repetitions": 0, "max_repetitions": 2000, "min_repetitions": 10, "rep_ms": 200.0,
               "queue_ahead_us": 10.0, "verify_calls": 0, "target_ci": 0.005, "warmup_ms": 10.0}
    chosen = args.arrangements.split(",")
    unknown = [a for a in chosen if a not in ARRANGEMENTS]
    if unknown:
        parser.error(f"unknown arrangement(s) {unknown}; known: {', '.join(ARRANGEMENTS)}")
    context = mp.get_context("spawn")
    workers: dict[str, tuple[Any, Any]] = {}
    for name, (busy, sample) in WORKERS.items():
        mine, theirs = context.Pipe()
        process = context.Process(target=worker, args=(theirs, busy, sample), daemon=True)
        process.start()
        mine.recv()  # ready: started one after the other
        workers[name] = (process, mine)
    results: dict[str, Any] = {"sizes": list(SIZES), "rounds": args.rounds, "arrangements": {}}
    try:
        for arrangement in chosen:
            first, second, paused = ARRANGEMENTS[arrangement]
            rows: dict[str, list[dict[str, Any]]] = {f"add-{n}": [] for n in SIZES}
            for _ in range(args.rounds):
                for name in rows:
                    baseline = _Remote(*workers[first], untrusted=False)
                    other = _Remote(*workers[second], untrusted=paused)
                    rows[name].append(_summary(time_case(baseline, other, name, 1, 2, options, options["target_ci"],
                                                         options["warmup_ms"])))
            table = {}
            for name, found in rows.items():
                table[name] = {key: _median(found, key) for key in found[0]}
                table[name]["speedups"] = [round(r["speedup"], 4) for r in found]
                t = table[name]
                print(f"{arrangement:20s} {name:12s} x{t['speedup']:.4f} {t['speedups']} "
                      f"us {t['baseline_us']:.3f}/{t['other_us']:.3f} ci {t['baseline_ci']}/{t['other_ci']} "
                      f"host {t['baseline_host_us']:.0f}/{t['other_host_us']:.0f} "
                      f"dev {t['baseline_device_us']:.0f}/{t['other_device_us']:.0f} hold {t['hold_us']:.0f} "
                      f"late {t['baseline_late']}/{t['other_late']} reps {t['repetitions']} loop {t['loop_s']}",
                      flush=True)
            results["arrangements"][arrangement] = table
            if args.json_out:
                atomic_write(args.json_out, json.dumps(results, indent=1), fsync=False)
    finally:
        stop_workers(list(workers.values()), join_s=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
