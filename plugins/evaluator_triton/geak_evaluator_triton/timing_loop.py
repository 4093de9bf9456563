"""Two sides timed against each other, block by block: the one loop every timing runs.

The judge times a candidate against the baseline with the two in *different*
processes (the candidate's child and the trusted timer child, whose baseline no
candidate code can reach); the eager child times PyTorch eager against the
baseline in one trusted process. Both run :func:`time_case` over objects with
the :class:`Side` interface: remote ones that talk to a child
(``timing_session.RemoteSide``) and local ones (``timed_calls.TimedSide``).

Per case:

1. Each side draws its inputs (on the seeds given: the judge's sessions and eager's child
   give both sides the secret timing seed) and warms up; while the baseline does, an untrusted side is
   paused (its whole process group stopped), so nothing of it runs on the device. A side
   is paused while the other runs where it is ``stoppable``: an untrusted side always, the
   baseline's timer where the judge asks for it (``pause_baseline``), so that each side
   runs its blocks as the other does, resumed from a stop.
2. Blocks alternate between the sides, the order flipping every round, a few
   milliseconds each (``BLOCK_MS``), the untrusted side paused during every
   baseline block (and a stoppable baseline during every one of the other's). Clock
   and thermal drift reach both sides alike.
3. After at least ``min_repetitions`` calls per side, the loop stops once both
   medians are known to within the case's target (the distribution-free 95 %
   interval of a median), when it has run ``rep_ms``, or at
   ``max_repetitions``; with ``repetitions`` > 0, after exactly that many. A
   call the host queued after the device had passed its start event (*late*)
   is not counted; many late calls in a block lengthen the busy-wait. Where most
   calls stay late (a call that waits for the device, a loaded host), both
   sides' late calls are counted from ``MAX_CALLS_OVER`` times the calls
   needed on, the busy-wait goes back to its first length, and the loop goes on
   to the same stop.
4. An untrusted side's outputs are kept whole on ``verify_calls`` calls per
   case in expectation, at random, and on one more call picked at random from
   a last block of random length if none was; every call's outputs are also
   sampled at random positions (``timed_calls``).
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from geak_evaluator_triton.timed_calls import MAX_HOLD_US, hold_for, median_interval

BLOCK_MS = 4.0  # wall time a block of calls aims at
MIN_BLOCK, MAX_BLOCK = 2, 32  # calls per block (at most timed_calls.MAX_BLOCK_CALLS)
MAX_CASE_CI = 0.05  # the loosest precision asked of any one case
LAST_BLOCK = (4, 12)  # calls of the last block that picks one call to keep, when none was kept
LATE_SHARE = 8  # more than 1 call in 8 of a block (and more than one) queued late: a longer busy-wait
MAX_LENGTHENINGS = 3  # of the busy-wait, per case
MAX_CALLS_OVER = 4  # a side's calls, kept or late, at this many times those needed: late ones count


class Side(Protocol):
    """What :func:`time_case` needs of one side."""

    untrusted: bool
    # paused (pause/resume) while the other side runs: true of every untrusted side
    stoppable: bool

    def start_case(self, case: str, seed: int, warmup_ms: float) -> dict[str, Any]: ...

    def block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]: ...

    def end_case(self) -> dict[str, Any]: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


def targets(estimates: dict[str, float], names: list[str], target: float, weighting: str) -> dict[str, float]:
    """Each case's precision target, so that the aggregate speedup is known to ``target``.

    The aggregate's relative error is about sqrt(sum (w_i * e_i)^2) for case
    weights w_i (a case's share of the baseline's total time for a sum of
    latencies, 1/n each for a geometric mean) and per-case errors e_i;
    e_i = target / sqrt(w_i) keeps it within ``target`` (sum w_i = 1)
    while a case that is 1 % of the total needs only a tenth of the
    precision. Capped at 5 %.
    """
    if not target or not names:
        return {name: target for name in names}
    if weighting == "sum":
        total = sum(estimates.get(n, 0.0) for n in names) or 1.0
        weights = {n: estimates.get(n, 0.0) / total for n in names}
    else:
        weights = {n: 1.0 / len(names) for n in names}
    return {n: min(MAX_CASE_CI, target / math.sqrt(max(weights[n], 1e-6))) for n in names}


@dataclass
class Tally:
    """One side's calls of one case, as they come back block by block."""

    latencies: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    own: list[int] = field(default_factory=list)
    samples: list[Any] = field(default_factory=list)  # per call (untrusted side)
    verified: list[tuple[int, Any]] = field(default_factory=list)  # (call number, outputs)
    deferred: int = 0  # whole copies the side kept to send after the session
    received: int = 0  # of those, how many reached the judge
    # calls queued after the device had passed their start events: their latencies, not
    # counted (see time_case), and how many of them were counted after all (keep_late)
    late_latencies: list[float] = field(default_factory=list)
    late_kept: int = 0
    count_late: bool = False  # from keep_late on, a block's late calls are counted as they come
    extra: list[dict[str, Any]] = field(default_factory=list)  # a block's further findings
    round_trip_s: float = 0.0  # the judge's seconds asking for blocks and waiting for them
    child_s: float = 0.0  # the child's seconds running them (the rest: transport, pausing)
    device_s: float = 0.0  # the device's seconds over them (first call's start to last call's end)

    def add(self, block: dict[str, Any]) -> None:
        latencies = list(block.get("latencies", []))
        late_at = set(block.get("late_at", []))
        if self.count_late:
            self.latencies += latencies
            self.late_kept += sum(1 for index in late_at if index < len(latencies))
        else:
            self.latencies += [ms for index, ms in enumerate(latencies) if index not in late_at]
            self.late_latencies += [ms for index, ms in enumerate(latencies) if index in late_at]
        self.gaps += block.get("gaps", [])
        self.own += block.get("own", [])
        self.samples += block.get("samples", [])
        self.verified += block.get("verified", [])  # numbered by the side, within the case
        self.deferred += int(block.get("deferred", 0))
        self.child_s += float(block.get("wall_ms", 0.0)) / 1e3
        self.device_s += float(block.get("device_ms", 0.0)) / 1e3
        rest = {k: v for k, v in block.items()
                if k not in ("latencies", "gaps", "own", "samples", "verified", "late_at", "kind", "wall_ms",
                             "device_ms", "deferred")}
        if rest:
            self.extra.append(rest)

    @property
    def calls(self) -> int:
        """Timed calls, late or not."""
        return len(self.latencies) + len(self.late_latencies)

    @property
    def late(self) -> int:
        """Calls queued late, counted or not."""
        return len(self.late_latencies) + self.late_kept

    def interval(self) -> float:
        return median_interval(sorted(self.latencies))

    def keep_late(self) -> None:
        """Count the late calls' latencies too (there were too few others), and those of the
        blocks still to come."""
        self.latencies += self.late_latencies
        self.late_kept += len(self.late_latencies)
        self.late_latencies = []
        self.count_late = True


def block_calls(call_ms: float, hold_us: float) -> int:
    per_call = max(call_ms, 1e-3) + hold_us / 1e3
    return max(MIN_BLOCK, min(MAX_BLOCK, int(round(BLOCK_MS / per_call))))


def _count(value: Any) -> int:
    """A small count a side reported (``beside``), or 0 for anything else: a diagnostic the
    candidate's frame carries too, so never trusted to be a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 20 else 0


def time_case(baseline: Side, other: Side, case: str, seed_a: int, seed_t: int, options: dict[str, Any],
              target: float, warmup_ms: float) -> dict[str, Any]:
    """Time ``other`` against ``baseline`` on one case; the record the judge keeps, with
    both sides' :class:`Tally` under ``"tallies"`` (popped by the judge)."""
    if other.untrusted and not other.stoppable:
        raise ValueError("an untrusted side must be stoppable: it is paused while the baseline runs")
    began = time.perf_counter()
    info_b = _quietly(other, lambda: baseline.start_case(case, seed_a, warmup_ms))
    warmed_b = time.perf_counter()
    info_o = _quietly(baseline, lambda: other.start_case(case, seed_t, warmup_ms))
    warm_children = (float(info_b.get("wall_ms", 0.0)) + float(info_o.get("wall_ms", 0.0))) / 1e3
    launch_us = max(float(info_b["launch_us"]), float(info_o["launch_us"]))
    hold_us = hold_for(launch_us, float(options.get("queue_ahead_us", 0.0)))
    call_ms = max(float(info_b["call_ms"]), float(info_o["call_ms"]))  # the slower side's
    calls = block_calls(call_ms, hold_us)
    fixed = int(options.get("repetitions", 0)) > 0
    limit = int(options["repetitions"]) if fixed else int(options["max_repetitions"])
    need = limit if fixed else int(options["min_repetitions"])  # latencies counted, at least
    budget_s = float(options["rep_ms"]) / 1e3
    per_call_s = (call_ms + hold_us / 1e3) / 1e3
    expected = max(1.0, min(limit, budget_s / max(2 * per_call_s, 1e-6)))
    verify_p = min(1.0, float(options.get("verify_calls", 2)) / expected) if other.untrusted else 0.0
    tallies = {"baseline": Tally(), "other": Tally()}
    sides = {"baseline": baseline, "other": other}
    loop_started = time.perf_counter()
    budget_from = loop_started  # the time budget's start (again where late calls start to count)
    rounds = 0
    late = 0
    first_hold_us = hold_us
    held_s = 0.0
    while True:
        order = ("baseline", "other") if rounds % 2 == 0 else ("other", "baseline")
        rounds += 1
        blocks = {}
        for name in order:
            side = sides[name]
            asked = time.perf_counter()
            # the other side stopped meanwhile where it is stoppable; only the other's outputs kept
            peer, keep_p = (other, 0.0) if name == "baseline" else (baseline, verify_p)
            blocks[name] = _quietly(peer, lambda side=side, n=calls, hold=hold_us, p=keep_p: side.block(n, hold, p, False))
            tallies[name].round_trip_s += time.perf_counter() - asked
            tallies[name].add(blocks[name])
            held_s += (calls + 1) * hold_us / 1e6  # with the block's lead-in
        too_late = max(1, calls // LATE_SHARE)
        if (any(len(b.get("late_at", ())) > too_late for b in blocks.values()) and hold_us < MAX_HOLD_US
                and late < MAX_LENGTHENINGS and not tallies["other"].count_late):  # (see below)
            # The host queued calls after the device had reached their start events: the
            # busy-wait is too short for this host now (another process's start-up, say).
            # Those calls are not counted (their events took in idle device time); a longer
            # busy-wait from here, for both sides. The case's other latencies stand: the
            # busy-wait runs before the flush and the start event, outside what is timed.
            # (Until 2026-11 a late block restarted the case, which cost eight
            # flash-attention verdicts at once up to 2.3 s of the exclusive hold each.)
            late += 1
            hold_us = min(MAX_HOLD_US, max(2 * hold_us, hold_us + 50.0))
        done = min(len(t.latencies) for t in tallies.values())
        if done < need and min(t.calls for t in tallies.values()) >= MAX_CALLS_OVER * need:
            # Most calls are late however long the busy-wait: calls whose host path the
            # device waits for (a call that synchronises, a host-side solver), or a host so
            # loaded that it cannot keep ahead. From here both sides' late calls are counted,
            # their latencies taking in the host's part, and the loop goes on to the usual
            # stop (the case's precision, rep_ms, max_repetitions), the two sides still
            # alternating: until 2026-11 it ended here, with each side's median over as few
            # as 4 x min_repetitions calls, which put KernelBench-X references 10-25 % off
            # themselves on an H200 (masked_select, min_gelu, eig). The time budget starts
            # again here: the calls before were spent finding that most stay late, and where
            # they had used up rep_ms the loop would end at once (fused_gelu_std, 0.85 of
            # itself at 40 calls a side on an H200). The busy-wait goes back to its first
            # length, for both sides, and is not lengthened again: these calls are late at any
            # length, and a lengthened one took most of the loop's time (KernelBench-X's
            # masked_select on an H200: 6.4 of its 8.3 s busy-waiting, 42-57 calls a side per
            # case, each median known to 11-16 %).
            # From here the budget is late_rep_ms where set (the host's jitter is in these
            # latencies: more calls for the same precision), and the busy-wait late_hold_us
            # where set (a call that waits for the device waits for the busy-wait too) and
            # the baseline's own calls were mostly late: a candidate that makes its calls
            # late on purpose must not shorten the busy-wait that keeps the baseline's
            # launch path out of the baseline's latencies.
            baseline_late = tallies["baseline"].late > tallies["baseline"].calls // 2
            for tally in tallies.values():
                tally.keep_late()
            done = min(len(t.latencies) for t in tallies.values())
            budget_from = time.perf_counter()
            budget_s = float(options.get("late_rep_ms") or options["rep_ms"]) / 1e3
            late_hold_us = float(options.get("late_hold_us") or 0.0)
            hold_us = late_hold_us if late_hold_us and baseline_late else first_hold_us
            calls = block_calls(call_ms, hold_us)
        if fixed:
            if done >= limit:
                break
            continue
        if done >= limit:
            break
        if done < int(options["min_repetitions"]):
            continue
        if time.perf_counter() - budget_from >= budget_s:
            break
        if target > 0 and all(t.interval() <= target for t in tallies.values()):
            break
    looped = time.perf_counter()
    for tally in tallies.values():
        if len(tally.latencies) < need:
            # Too few calls on time (a loaded host, every busy-wait too short): the late ones
            # are counted too, and more than one in eight of them flags the verdict.
            tally.keep_late()
    if other.untrusted and not tallies["other"].verified and not tallies["other"].deferred:
        calls_last = LAST_BLOCK[0] + secrets.randbelow(LAST_BLOCK[1] - LAST_BLOCK[0] + 1)
        tallies["other"].add(_quietly(baseline, lambda: other.block(calls_last, hold_us, 0.0, True)))
    verified = time.perf_counter()
    ended = {"baseline": _quietly(other, baseline.end_case), "other": _quietly(baseline, other.end_case)}
    b, o = tallies["baseline"], tallies["other"]
    finished = time.perf_counter()
    return {
        "repetitions": min(len(b.latencies), len(o.latencies)),
        "target_ci": target,
        "launch_us": round(launch_us, 1),
        "hold_us": round(hold_us, 1),
        "holds_lengthened": late,
        "block_calls": calls,
        # Where the case's wall time went: warm-up (the baseline's part of it), the loop
        # (its blocks' device time, the children's time around it, and the rest: transport
        # and pausing), the verification block, the case's end.
        "wall_s": {"warmup": round(loop_started - began, 4), "warmup.baseline": round(warmed_b - began, 4),
                   "warmup.children": round(warm_children, 4), "loop.held": round(held_s, 4),
                   "holds_lengthened": late, "late.baseline": b.late, "late.candidate": o.late,
                   # whether each side's calling thread took the session's calling CPU
                   # (case_ready's calling_cpu; timing_session.calling_cpu): summed over the
                   # cases, the phases say on how many
                   "pinned.baseline": int(info_b.get("calling_cpu") is not None),
                   "pinned.candidate": int(info_o.get("calling_cpu") is not None),
                   # threads left beside each side's calling thread on its CPU after the
                   # warm-up (case_ready's beside; 0 where it could not be read, or the
                   # candidate's frame said something else than a count)
                   "beside.baseline": _count(info_b.get("beside")),
                   "beside.candidate": _count(info_o.get("beside")),
                   "loop": round(looped - loop_started, 4),
                   "loop.device": round(b.device_s + o.device_s, 4),
                   "loop.children": round(b.child_s + o.child_s, 4),
                   "loop.round_trips": round(b.round_trip_s + o.round_trip_s, 4),
                   "verify": round(verified - looped, 4), "end": round(finished - verified, 4)},
        "reference_ms": statistics.median(b.latencies),
        "candidate_ms": statistics.median(o.latencies),
        "reference_spread": spread(b.latencies),
        "candidate_spread": spread(o.latencies),
        "reference_ci": _finite(b.interval()),
        "candidate_ci": _finite(o.interval()),
        "reference_gap_ms": statistics.median(b.gaps),
        "candidate_gap_ms": statistics.median(o.gaps),
        "zero_launch_calls": sum(1 for count in o.own if count == 0) if o.own else 0,
        "late_kept": {"baseline": b.late_kept, "candidate": o.late_kept},
        "estimate_ms": float(info_b["estimate_ms"]),
        "tallies": tallies,
        "ended": ended,
    }


def _quietly(peer: Side, work: Any) -> Any:
    """Run ``work`` (the other side's) with ``peer`` paused where it is stoppable: nothing of
    it runs meanwhile."""
    if not peer.stoppable:
        return work()
    peer.pause()
    try:
        return work()
    finally:
        peer.resume()


def spread(values: list[float]) -> list[float]:
    ordered = sorted(values)
    if len(ordered) < 4:
        return [ordered[0], ordered[-1]]
    q = statistics.quantiles(ordered, n=5)
    return [q[0], q[-1]]  # 20th and 80th percentiles


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
