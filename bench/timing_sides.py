"""Does where a side runs change its measured latency? One kernel timed against itself.

The judge times the baseline in its trusted timer child and the candidate in the
candidate's child, two processes sharing the device, the candidate's process group
stopped while the baseline runs (``timing_loop``). A reference judged against itself
read 5-11 % faster than the baseline on 4-5 us kernels (H200), while the same loop
with both sides in one process read 0-6 % faster. This bench takes the judge out of
it: a plain Triton add kernel on four sizes, timed against itself with the judge's
own loop (``timing_loop.time_case`` over ``timed_calls.TimedSide``), every side in a
spawned worker process of this script, in these arrangements:

* ``one``: both sides in one worker (as the eager child times eager and the baseline);
* ``two``: a side per worker, the second worker's side paused (SIGSTOP of its
  process) while the first's blocks run, as the judge pauses a candidate;
* ``two_unpaused``: a side per worker, nothing paused;
* ``two_swapped``: as ``two`` with the workers' roles swapped (the later-started
  worker is the baseline), which separates "the paused side" from "the first process";
* ``two_busy_host``: as ``two``, the second worker spending 30 us of host time after
  each call (the judge's candidate side gathers samples and logs launches; the timer
  does neither).

Per arrangement and size: the median over ``--rounds`` of the other side's speedup
over the baseline (baseline median / other median; ideally 1.000), and the two medians
in microseconds. Writes ``--json`` after every arrangement.

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

SIZES = (4096, 98432, 1 << 20, 1 << 24)
ARRANGEMENTS = ("one", "two", "two_unpaused", "two_swapped", "two_busy_host")


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
    """What ``TimedSide`` asks of a harness, for the add kernel."""

    def __init__(self, busy_us: float = 0.0) -> None:
        self.busy_us = busy_us

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        generator = torch.Generator(device="cuda").manual_seed(seed)
        return {name: torch.randn(case.n, device="cuda", generator=generator) for name in ("x", "y")}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"out": torch.full((case.n,), float("nan"), device="cuda")}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        block = 1024
        _add[(triton.cdiv(case.n, block),)](inputs["x"], inputs["y"], outputs["out"], case.n, BLOCK=block)
        if self.busy_us:
            until = time.perf_counter() + self.busy_us / 1e6
            while time.perf_counter() < until:
                pass


def _side(busy_us: float) -> Any:
    import torch
    from geak_evaluator_triton.timed_calls import TimedSide, cycles_per_us

    flush_bytes = 2 * torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
    return TimedSide(Harness(busy_us), None, flush, cycles_per_us())


class _Task:
    outliers = None


def worker(conn: Any, busy_us: float) -> None:
    """Serve one side (``start``/``block``/``end``) or time two of its own (``pair``)."""
    sides: dict[str, Any] = {}
    cases = {f"add-{n}": Case(n) for n in SIZES}
    while True:
        command, payload = conn.recv()
        if command == "exit":
            return
        try:
            if command == "start":
                side = sides.setdefault("served", _side(busy_us))
                answer = side.start_case(_Task(), cases[payload["case"]], payload["seed"], payload["warmup_ms"])
            elif command == "block":
                answer = sides["served"].block(payload["calls"], payload["hold_us"])
            elif command == "end":
                sides["served"].inputs = None
                answer = {}
            elif command == "pair":
                answer = _pair(sides, cases[payload["case"]], payload["options"])
            else:
                raise ValueError(command)
        except Exception as exc:  # the bench reports it and stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        conn.send(answer)


class _Local:
    untrusted = False

    def __init__(self, side: Any, case: Case) -> None:
        self.side, self.case = side, case

    def start_case(self, case: str, seed: int, warmup_ms: float) -> dict[str, Any]:
        return self.side.start_case(_Task(), self.case, seed, warmup_ms)

    def block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]:
        return self.side.block(calls, hold_us)

    def end_case(self) -> dict[str, Any]:
        self.side.inputs = None
        return {}

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass


def _pair(sides: dict[str, Any], case: Case, options: dict[str, Any]) -> dict[str, Any]:
    from geak_evaluator_triton.timing_loop import time_case

    a = sides.setdefault("a", _side(0.0))
    b = sides.setdefault("b", _side(0.0))
    record = time_case(_Local(a, case), _Local(b, case), case.name, 1, 2, options, options["target_ci"],
                       options["warmup_ms"])
    return _summary(record)


class _Remote:
    """A side in a worker process; ``untrusted``: paused (SIGSTOP) while the other side runs."""

    def __init__(self, process: Any, conn: Any, untrusted: bool) -> None:
        self.process, self.conn, self.untrusted = process, conn, untrusted

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
    return {"speedup": record["reference_ms"] / record["candidate_ms"],
            "baseline_us": record["reference_ms"] * 1e3, "other_us": record["candidate_ms"] * 1e3,
            "repetitions": record["repetitions"], "hold_us": record["hold_us"],
            "restarts": record["holds_lengthened"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--arrangements", default=",".join(ARRANGEMENTS))
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    from geak_evaluator_triton.timing_loop import time_case

    options = {"repetitions": 0, "max_repetitions": 2000, "min_repetitions": 10, "rep_ms": 200.0,
               "queue_ahead_us": 10.0, "verify_calls": 0, "target_ci": 0.005, "warmup_ms": 10.0}
    context = mp.get_context("spawn")
    workers = []
    for busy in (0.0, 0.0, 30.0):  # started in this order: first, second, second with a busy host
        mine, theirs = context.Pipe()
        process = context.Process(target=worker, args=(theirs, busy), daemon=True)
        process.start()
        workers.append((process, mine))
    results: dict[str, Any] = {"sizes": list(SIZES), "rounds": args.rounds, "arrangements": {}}
    try:
        for arrangement in args.arrangements.split(","):
            rows: dict[str, list[dict[str, Any]]] = {f"add-{n}": [] for n in SIZES}
            for _ in range(args.rounds):
                for name in rows:
                    if arrangement == "one":
                        workers[0][1].send(("pair", {"case": name, "options": options}))
                        found = workers[0][1].recv()
                        if "error" in found:
                            raise RuntimeError(found["error"])
                    else:
                        first, second = (workers[1], workers[0]) if arrangement == "two_swapped" else (
                            workers[0], workers[2] if arrangement == "two_busy_host" else workers[1])
                        baseline = _Remote(*first, untrusted=False)
                        other = _Remote(*second, untrusted=arrangement != "two_unpaused")
                        found = _summary(time_case(baseline, other, name, 1, 2, options, options["target_ci"],
                                                   options["warmup_ms"]))
                    rows[name].append(found)
            table = {}
            for name, found in rows.items():
                table[name] = {"speedup": round(statistics.median(r["speedup"] for r in found), 4),
                               "speedups": [round(r["speedup"], 4) for r in found],
                               "baseline_us": round(statistics.median(r["baseline_us"] for r in found), 3),
                               "other_us": round(statistics.median(r["other_us"] for r in found), 3),
                               "hold_us": round(statistics.median(r["hold_us"] for r in found), 1),
                               "restarts": sum(r["restarts"] for r in found)}
                print(f"{arrangement:14s} {name:12s} speedup {table[name]['speedup']:.4f} "
                      f"baseline {table[name]['baseline_us']:8.3f} us  other {table[name]['other_us']:8.3f} us  "
                      f"hold {table[name]['hold_us']:6.1f} us  {table[name]['speedups']}", flush=True)
            results["arrangements"][arrangement] = table
            if args.json_out:
                tmp = args.json_out + ".tmp"
                with open(tmp, "w") as handle:
                    json.dump(results, handle, indent=1)
                os.replace(tmp, args.json_out)
    finally:
        for process, conn in workers:
            try:
                os.kill(process.pid, signal.SIGCONT)
                conn.send(("exit", {}))
            except OSError:
                pass
            process.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
