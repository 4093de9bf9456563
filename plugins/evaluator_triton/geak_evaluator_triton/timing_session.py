"""Timing, judge side: a timing session between the baseline's timer and a candidate, and
what its figures mean.

The measurement runs in two children while the judge holds the device
exclusively: the baseline in the task's trusted timer (``baseline_timer``), the
candidate in its own child, block by block (``timing_loop.time_case``, driven
from here through :class:`RemoteSide`). The candidate's process group is
stopped while the baseline runs, so neither its code nor its kernels run
then. This module asks for the session, then turns each case's record into
latencies, speedups and roofline figures, after the checks that can reject a
timing, each interpreted by its module in ``checks/``: what the candidate did to
its process and its inputs while timed (``tampering``, ``torch_compute``,
``input_mutation``), what its outputs are (``output_objects``), its own launches in every call (``launches``), the timed
calls' outputs (``timed_outputs``), calls queued late (``late_calls``), hidden
work on other streams (``side_work``) and throughput above the hardware's peak
(``peak``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections.abc import Mapping
from typing import Any

from geak_core.api.components import HardwareProfile
from geak_core.api.model import EvalResult, ShapeResult
from geak_core.api.scaling import set_speedups
from geak_core.api.tasks import Task

from geak_evaluator_triton.checks import (
    input_mutation,
    late_calls,
    launches,
    output_objects,
    peak,
    side_work,
    tampering,
    timed_outputs,
    torch_compute,
)
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.performance import shape_result
from geak_evaluator_triton.protocol import TimingOptions
from geak_evaluator_triton.reference_run import ReferenceRun
from geak_evaluator_triton.run_compare import tail
from geak_evaluator_triton.timed_calls import warmup_for
from geak_evaluator_triton.timing_loop import targets, time_case
from geak_evaluator_triton.verdict import Verdict, describe_exception, trim_traceback

MIB = 1024 * 1024
NO_PROFILE_FLUSH_MIB = 256  # enough for any current GPU's caches, when the profile is unknown
MIN_FLUSH_MIB = 32
END = object()  # a side's inbox: its process has ended
ENDED = "ended while being timed"


def with_exit(reason: str, exit_note: str) -> str:
    """``reason`` with how the process ended (``SandboxResult.describe_exit``) after it, where
    it says a side ended while being timed: killed by SIGKILL (out of host memory), a crash,
    an exit status."""
    if reason.endswith(ENDED) and exit_note:
        return f"{reason} (its process {exit_note})"
    return reason


def flush_bytes(options: TritonEvaluatorOptions, profile: HardwareProfile | None) -> int:
    """The cache-flush buffer written before each timed call: ``flush_mib`` when set, else
    twice the profile's L2 and last-level caches (at least MIN_FLUSH_MIB), else 256 MiB.

    Writing twice a cache's size evicts everything it held; every MiB more is device time
    spent in each timed call (at an H100's peak 3.35 TB/s, 256 MiB take at least 80 us, twice
    its 50 MiB L2 at least 31 us).
    """
    if options.flush_mib > 0:
        return int(options.flush_mib * MIB)
    if profile is None:
        return NO_PROFILE_FLUSH_MIB * MIB
    cache_mib = profile.l2_cache_mib + profile.last_level_cache_mib
    return int(max(MIN_FLUSH_MIB, 2 * cache_mib) * MIB)


def loop_options(options: TritonEvaluatorOptions, profile: HardwareProfile | None) -> TimingOptions:
    """The timing loop's settings, for a session here or the eager child's own."""
    return {
        "warmup_ms": options.warmup_ms,
        "rep_ms": options.rep_ms,
        "late_rep_ms": options.late_rep_ms,
        "late_hold_us": options.late_hold_us,
        "repetitions": options.repetitions,
        "min_repetitions": options.min_repetitions,
        "max_repetitions": options.max_repetitions,
        "target_ci": options.target_ci,
        "weighting": "sum" if options.speedup_method == "sum" else "equal",
        "l2_flush": options.l2_flush,
        "queue_ahead_us": options.queue_ahead_us,
        "flush_bytes": flush_bytes(options, profile) if options.l2_flush else 0,
        "verify_calls": options.verify_calls,
    }


def timing_request(ref: ReferenceRun, options: TritonEvaluatorOptions, profile: HardwareProfile | None) -> dict[str, Any]:
    """What a child that will be timed is told up front: the cases, seed A (the baseline's
    warm-up, in eager's child),
    the loop's settings; ``sample``: gather outputs at random positions after every call
    (not where the harness compares outputs its own way, a permutation say)."""
    return {
        "cases": [c.name for c in ref.timed],
        "reference_seed": ref.seeds[0],
        "options": loop_options(options, profile),
        "sample": not ref.custom_compare,
    }


def timing_cpus(env: Mapping[str, str | None], available: set[int] | None = None) -> set[int]:
    """The CPUs both sides of a timing session on the device of a slot's ``env`` run on.

    As many as a child's share of the host's thread pools (``OMP_NUM_THREADS``, set per
    slot; at least two: the calling thread and one more), taken from the CPUs this process
    may use at an offset set by the device's number, so that sessions on different devices
    (of this judge, or of one judge per device) use different CPUs where there are enough.
    The two sides never run at once (the candidate is stopped while the baseline runs; the
    timer waits while the candidate does), so they do not compete for these CPUs; they
    share them so that the host's part of a call runs on the same cores for both.
    """
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    try:
        wanted = max(2, int(env.get("OMP_NUM_THREADS") or 0))
    except ValueError:
        wanted = 2
    if len(cpus) <= wanted:
        return set(cpus)
    device = (env.get("HIP_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
    number = int(device) if device.strip().isdigit() else sum(device.encode())
    start = (number * wanted) % len(cpus)
    return {cpus[(start + k) % len(cpus)] for k in range(wanted)}


def calling_cpu(cpus: set[int]) -> int | None:
    """The one CPU of a session's ``cpus`` (:func:`timing_cpus`) that each side's calling
    thread (the one that makes the timed calls) runs on alone, the same for both sides;
    their other threads run on the rest. None with fewer than two CPUs (no rest).

    Where a call waits for the host (a synchronising call, a host-side solver), the host's
    part of it is in the timed span, and how fast that part runs depends on the core: its
    clock, its cache, what its SMT sibling runs. With the two sides' threads anywhere among
    the session's CPUs, KernelBench-X references timed against themselves on an H200 read
    0.65 of themselves on three consecutive cases and 1.01-1.04 on the next ones
    (masked_select), each median tight: the two calling threads on different cores for a
    while, not noise. On one core, the two sides (which never run at once) share it."""
    return min(cpus) if len(cpus) >= 2 else None


class TimingError(Exception):
    """A side could not go on; ``untrusted``: the candidate's side (else the baseline's timer)."""

    def __init__(self, message: str, untrusted: bool, error: str | None = None) -> None:
        super().__init__(message)
        self.untrusted = untrusted
        self.error = error


class RemoteSide:
    """A side of ``timing_loop`` that is a child: commands through its stdin (``replier``),
    answers through ``inbox`` (its frame handler puts the timing frames there). An untrusted
    side, and a trusted one asked to be (``stoppable``: the baseline's timer under
    ``pause_baseline``), is paused while the other side runs by stopping its process group;
    the time it spends stopped is not charged to its timeout."""

    def __init__(self, replier: Any, inbox: queue.Queue[Any], untrusted: bool, label: str,
                 deadline_s: float | None = None, stoppable: bool = False) -> None:
        self.replier = replier
        self.inbox = inbox
        self.untrusted = untrusted
        self.stoppable = untrusted or stoppable  # an untrusted side always
        self.label = label
        self.deadline_s = deadline_s
        self.cpu: int | None = None  # the CPU its calling thread is asked to run on (calling_cpu)
        self._paused_at: float | None = None

    def ask(self, command: dict[str, Any], kind: str) -> dict[str, Any]:
        self.replier.send(command)
        try:
            frame = self.inbox.get(timeout=self.deadline_s)
        except queue.Empty:
            raise TimingError(f"{self.label} did not answer within {self.deadline_s:.0f} s",
                              self.untrusted) from None
        if frame is END:
            raise TimingError(f"{self.label} {ENDED}", self.untrusted)
        if frame.get("kind") == "error":
            raise TimingError(f"{self.label} raised {describe_exception(frame)} while being timed on case "
                              f"{frame.get('case')!r}", self.untrusted, frame.get("error"))
        if frame.get("kind") != kind:
            raise TimingError(f"{self.label} answered {frame.get('kind')!r} to {kind!r}", self.untrusted)
        return frame

    def start_case(self, case: str, seed: int, warmup_ms: float) -> dict[str, Any]:
        ask: dict[str, Any] = {"name": case, "seed": seed, "warmup_ms": warmup_ms}
        if self.cpu is not None:
            ask["cpu"] = self.cpu
        return self.ask({"case": ask}, "case_ready")

    def block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]:
        return self.ask({"block": {"calls": calls, "hold_us": hold_us, "verify_p": verify_p,
                                    "reservoir": reservoir}}, "block")

    def end_case(self) -> dict[str, Any]:
        return self.ask({"case_done": True}, "case_done")

    def pause(self) -> None:
        if self.stoppable:
            self.replier.pause_child()
            self._paused_at = time.monotonic()

    def resume(self) -> None:
        if self.stoppable and self._paused_at is not None:
            self.replier.resume_child()
            self.replier.exclude(time.monotonic() - self._paused_at)
            self._paused_at = None


def run_session(ref: ReferenceRun, options: TritonEvaluatorOptions, loop: TimingOptions, baseline: RemoteSide,
                candidate: RemoteSide, timing_seed: int, estimates: dict[str, float],
                errors: Verdict) -> tuple[list[dict[str, Any]], str]:
    """Time every timed case; (one record per case timed, why the baseline stopped timing: ""
    when it did not). A candidate's failure goes into ``errors`` (stage ``timing``)."""
    names = [c.name for c in ref.timed]
    aims = targets(estimates, names, float(loop.get("target_ci") or 0.0), str(loop.get("weighting", "sum")))
    records: list[dict[str, Any]] = []
    # Both sides draw their inputs on the timing seed: the same inputs, the same work. A
    # call's time can depend on its values (torch.linalg.eig's LAPACK iterations: 3.03-3.30
    # ms across five torch.rand(128, 128) on one CPU, each median to 1.4 %:
    # bench/input_dependence.py), and with the baseline on seed A, KernelBench-X's eig read
    # 0.85-1.12 of itself case by case on an H200. The
    # baseline runs in its own trusted process, so its outputs on that seed are no more
    # within the candidate's reach than the reference's are.
    for index, name in enumerate(names):
        try:
            record = time_case(baseline, candidate, name, timing_seed, timing_seed, dict(loop), aims[name],
                               warmup_for(float(loop["warmup_ms"]), index))
            record.update(case=name, seed=timing_seed)
            if side_work.found(record):
                # A finding that charges a candidate must reproduce: the case is timed once
                # more, and its latency and this check are read off the second timing (every
                # other check off both, apply_timing). Work hidden on another stream shows in
                # both; a moment of the host or the device outside the candidate's doing
                # rarely does (KernelBench-X references timed against themselves on an H200:
                # one case of a task in a few charged 0.2-0.8 ms a call, the other 15 cases
                # not, the same tasks clean in other runs).
                # The judge's choice, not the candidate's time: off the child's clock.
                waiting = getattr(getattr(candidate, "replier", None), "judge_waiting", None)
                with waiting() if waiting is not None else contextlib.nullcontext():
                    again = time_case(baseline, candidate, name, timing_seed, timing_seed, dict(loop), aims[name],
                                      warmup_for(float(loop["warmup_ms"]), 1))
                record = {**again, "case": name, "seed": timing_seed, "first": record}
        except TimingError as exc:
            if exc.untrusted:
                errors.fail("timing", f"timing failed on case {name!r}: {exc}", exc.error)
                return records, ""
            return records, str(exc)
        records.append(record)
    return records, ""


def timings_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A case's timings, first to last: its record alone, or, for a case timed once more
    (``side_work`` found in the first, :func:`run_session`), the first one's and then its."""
    return [record["first"], record] if "first" in record else [record]


def apply_timing(task: Task, ref: ReferenceRun, timings: list[dict[str, Any]], errors: Verdict,
                 completed: bool, stderr: str, profile: HardwareProfile | None,
                 options: TritonEvaluatorOptions, result: EvalResult, run_child: Any) -> None:
    """Fill ``result``'s performance fields from the session's records."""
    cases = {c.name: c for c in ref.cases}
    verdict = Verdict()
    for failure in errors.failures:
        verdict.fail(failure.stage, failure.reason, failure.error)
    shapes: list[ShapeResult] = []
    unverified: list[str] = []
    left_out: list[str] = []  # cases flagged above the peak: their speedups count nowhere
    for record in timings:
        case = cases[record["case"]]
        at = f"while being timed on case {case.name!r}"
        # A case timed twice (side_work found in the first: run_session) is checked on both
        # timings; its latency comes from the second.
        for timed in timings_of(record):
            for extra in timed["tallies"]["other"].extra:
                output_objects.report(verdict, at, extra.get("objects", []))
                tampering.report(verdict, at, extra.get("violations", []))
                torch_compute.report(verdict, at, extra.get("compute", []), task)
            ended = timed.get("ended") or {}
            # An input the baseline changes too (an optimizer's parameters) is the task's to change.
            allowed = set((ended.get("baseline") or {}).get("mutates") or [])
            input_mutation.report(verdict, at, [p for p in (ended.get("other") or {}).get("mutated") or []
                                                if p not in allowed])
            launches.report_timed(verdict, case.name, timed.get("zero_launch_calls") or 0)
            note = timed_outputs.report(verdict, task, ref, case, timed, run_child)
            if note:
                unverified.append(note)
        late_calls.report(verdict, record)
        latency = side_work.report(verdict, record)
        shape = shape_result(case, {**record, "candidate_ms": latency}, profile)
        impossible = peak.report(verdict, shape, task)
        if impossible:
            left_out.append(impossible)
        shapes.append(shape)
    if not verdict.failures and (not completed or len(shapes) < len(ref.timed)):
        verdict.fail("timing", f"the timing of {len(shapes)} of {len(ref.timed)} cases finished", tail(stderr, 4000))
    for flag in verdict.flags:
        if flag not in result.flags:
            result.flags.append(flag)
    first = verdict.first
    result.shapes = shapes
    if first is None and unverified:
        result.flags.append("timed_outputs_differ")
        result.performance_measured = False
        result.performance_note = ("not measured: the timed outputs of timing-only cases differ from the "
                                   "reference's: " + "; ".join(unverified[:3]))
        return
    if first is not None:
        if first.stage == "anticheat":
            result.correct = False
        result.failed_stage = first.stage
        result.reason = verdict.reason()
        result.error = trim_traceback(first.error)
        result.mismatches = first.mismatches
        result.performance_measured = False
        result.performance_note = f"not measured: {first.reason}"
        return
    every = [timed for record in timings for timed in timings_of(record)]
    parts = {part for r in every for part in (r.get("wall_s") or {})}
    for part in sorted(parts):  # where the timing phase went, over all timings (timing_loop.time_case)
        result.phases[f"timing.{part}"] = round(sum(float((r.get("wall_s") or {}).get(part, 0.0))
                                                    for r in every), 3)
    retimed = len(every) - len(timings)
    if retimed:
        result.phases["timing.retimed_cases"] = retimed
    result.performance_measured = True
    # every aggregate, over the counted cases (not those flagged above the peak), the configured
    # one the headline
    set_speedups(result, options.speedup_method)
    fractions = [s.roofline_fraction for s in shapes if s.roofline_fraction is not None and s.counted]
    result.roofline_fraction = sum(fractions) / len(fractions) if fractions else None
    baseline = "the task's timing baseline" if task.timing_baseline else "reference"
    note = (f"CUDA-event medians, {baseline} (in a process of its own) and candidate in alternating blocks")
    if ref.untimed:
        note += "; not timed: " + "; ".join(f"{k} ({v})" for k, v in list(ref.untimed.items())[:3])
    if profile is None:
        note += "; no hardware profile matched the device, so no roofline figures"
    if left_out:
        more = f" (and {len(left_out) - 3} more)" if len(left_out) > 3 else ""
        why = "; ".join(left_out[:3]) + more
        if result.speedup is None:
            note = (f"no speedup: every timed case ({len(left_out)}) was measured faster than the "
                    f"hardware allows (above_peak), and such a case counts in no speedup: {why}; {note}")
        else:
            note += (f"; {len(left_out)} of {len(shapes)} timed cases left out of every speedup, "
                     f"measured faster than the hardware allows (above_peak): {why}")
    result.performance_note = note
    if result.speedup is not None and result.speedup > options.suspicious_speedup:
        result.flags.append("suspicious_speedup")

