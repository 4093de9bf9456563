"""One candidate's child, judge side: the plan it gets, its frames as they come, its verdict.

The candidate child imports the code, runs the correctness plan and, on a GPU,
times it in the same process. The judge reads the frames as they arrive
(:class:`CandidateFrames`) and compares each run in a thread of its own
(:class:`Comparisons`), in order, while the child goes on with its next runs;
only the findings are kept. With several candidates on one device every run
waits for the device gate, and when the child reports ``checked`` the judge
waits for the last comparison and decides, from what it has seen, whether the
candidate earned timing. Timing then holds the device exclusively until the
child ends.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.tasks import Case, Task
from geak_core.kit.sandbox import Replier, SandboxResult

from geak_evaluator_triton.autotuning import AutotuneLog, allow_for, planned_cases, read_autotuners
from geak_evaluator_triton.checks import (
    contract,
    determinism,
    input_mutation,
    launches,
    output_objects,
    tampering,
    torch_compute,
)
from geak_evaluator_triton.devices import Slot
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.protocol import ABORT, GO, FrameHandler, Plan, RunChecks, where
from geak_evaluator_triton.reference_run import ReferenceRun, candidate_budget, nbytes_of
from geak_evaluator_triton.run_compare import JudgeError, compare_frame, custom_compare, tail
from geak_evaluator_triton.verdict import Verdict, describe_exception


def correctness_plan(ref: ReferenceRun, options: TritonEvaluatorOptions, gate: bool) -> Plan:
    checked = ref.checked
    stage2 = ref.stage2_cases(options.check_outliers)
    return {
        "seeds": ref.seeds,
        "stage1": [c.name for c in checked],
        "stage2": stage2,
        "case_seeds": {
            "stage1": {c.name: ref.plan_seeds("stage1", c) for c in checked},
            "stage2": {c.name: ref.plan_seeds("stage2", c) for c in checked if c.name in stage2},
        },
        "no_rerun": [c.name for c in checked if ref.heavy(c)],
        "determinism": options.check_determinism,
        "gate": gate,
    }


def plan_change(provisional: ReferenceRun, final: ReferenceRun, options: TritonEvaluatorOptions,
                timed: bool) -> str:
    """Why a candidate child planned on a reference's case table cannot stand for the finished
    reference (empty: it can): the reference was redone on other seeds, or a case that was to
    be timed could not be timed by the reference."""
    if correctness_plan(provisional, options, False) != correctness_plan(final, options, False):
        return "the reference's plan changed while it ran (" + ", ".join(final.flags or ["cases"]) + ")"
    if timed and [c.name for c in provisional.timed] != [c.name for c in final.timed]:
        return "the reference could not be timed on every timed case"
    return ""


def expected_runs(ref: ReferenceRun, plan: Plan) -> int:
    cases = {c.name: c for c in ref.cases}
    return sum(len(ref.plan_seeds(stage, cases[name])) for stage in ("stage1", "stage2")
               for name in plan.get(stage, []))


PENDING_BYTES = 1 << 30  # outputs a candidate's runs may have waiting for comparison (at least one run's)
IDLE_S = 5.0  # a comparison thread with nothing queued for this long ends


class Comparisons:
    """Compares a child's runs in a thread of its own, in the order they came.

    The frame reader hands each run over and goes on reading, so the child is not held
    up by the judge's comparisons, nor, beside a reference still running, by that
    reference: it runs its next case while the last one is compared. At most
    ``limit`` bytes of outputs wait (always one run): beyond that the reader, and so
    the child, waits. ``compare(frame, digest)`` fills in ``digest``; an exception from
    it is kept in ``error`` (the runs after it are dropped) for the reader to raise.
    """

    def __init__(self, compare: Callable[[dict[str, Any], dict[str, Any]], None], limit: int = PENDING_BYTES) -> None:
        self._compare = compare
        self._limit = limit
        self._cond = threading.Condition()
        self._queue: deque[tuple[dict[str, Any], dict[str, Any], int]] = deque()
        self._bytes = 0
        self._busy = False
        self._thread: threading.Thread | None = None
        self._closed = False
        self.error: BaseException | None = None

    def put(self, frame: dict[str, Any], digest: dict[str, Any]) -> float:
        """Queue one run; returns the seconds spent waiting for room."""
        size = nbytes_of(frame.get("outputs")) + nbytes_of(frame.get("rerun"))
        began = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: self.error is not None or self._bytes == 0 and not self._busy
                                or self._bytes + size <= self._limit)
            self._queue.append((frame, digest, size))
            self._bytes += size
            self._closed = False
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="geak-compare", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return time.monotonic() - began

    def drain(self) -> float:
        """Wait for every queued run to be compared; returns the seconds waited."""
        began = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: not self._queue and not self._busy)
        return time.monotonic() - began

    def close(self) -> None:
        """Drop what is still queued; the thread ends (a later ``put`` starts another)."""
        with self._cond:
            self._queue.clear()
            self._bytes = 0
            self._closed = True
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                # An idle thread ends after a while: one that nobody closed does not linger.
                if not self._cond.wait_for(lambda: bool(self._queue) or self._closed, timeout=IDLE_S) \
                        or not self._queue:
                    self._thread = None
                    return
                frame, digest, size = self._queue.popleft()
                self._busy = True
            try:
                if self.error is None:  # after a failure the rest are dropped unread
                    self._compare(frame, digest)
            except BaseException as exc:  # the reader's thread raises it
                self.error = exc
            finally:
                del frame
                with self._cond:
                    self._busy = False
                    self._bytes -= size
                    self._cond.notify_all()


@dataclass
class Gating:
    """How the child shares its device: per-run shared holds, then an exclusive timing hold."""

    slot: Slot
    shared_runs: bool  # several slots on this device: each run holds the gate shared
    holding: str | None = None  # None | "shared" | "capped" | "exclusive"
    waited_s: float = 0.0
    timing_wait_s: float = 0.0  # of waited_s, waiting to time (for the others' runs and timing)
    spare_wait_s: float = 0.0  # of that, waiting for spare children creating their CUDA context
    timing_s: float = 0.0
    _since: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hold_shared(self, replier: Replier, capped: bool = True) -> None:
        """Hold the device shared: ``capped`` for the candidate's runs, not for the trusted
        baseline's warm-up (mostly loading compiled kernels, as a reference child does)."""
        with replier.judge_waiting():  # a long wait must not run out the child's clock
            waited = self.slot.gate.acquire_shared(capped=capped, holder=id(self))
        with self._lock:
            self.holding = "capped" if capped else "shared"
        self.waited_s += waited

    def hold_exclusive(self, replier: Replier) -> None:
        self.release()
        with replier.judge_waiting():
            waited = self.slot.gate.acquire_exclusive()
        with self._lock:
            self.holding = "exclusive"
            self._since = time.monotonic()
        self.waited_s += waited
        self.timing_wait_s += waited
        self.spare_wait_s += self.slot.gate.spare_wait_s

    def release(self) -> None:
        with self._lock:
            holding, self.holding = self.holding, None
        if holding in ("shared", "capped"):
            self.slot.gate.release_shared(capped=holding == "capped", holder=id(self))
        elif holding == "exclusive":
            self.timing_s += time.monotonic() - self._since
            self.slot.gate.release_exclusive()


TIMER_ANSWER_S = 60.0  # the baseline's timer answers a request (a case's warm-up, a block) within this
TIMER_ANSWER_CALLS = 20  # ... plus this many calls of the task's longest case


def timer_answer_s(estimates: dict[str, float], ceiling_s: float) -> float:
    """How long a timing session waits for one answer of the baseline's timer while it holds
    the device exclusively: TIMER_ANSWER_S plus TIMER_ANSWER_CALLS calls of the longest case
    (its warm-up estimate), at most ``ceiling_s``. A timer past it is closed and the verdict
    is not timed: every other verdict on the device waits for the session meanwhile."""
    longest_s = max(estimates.values(), default=0.0) / 1e3
    return min(ceiling_s, TIMER_ANSWER_S + TIMER_ANSWER_CALLS * longest_s)


class CandidateFrames(FrameHandler):
    """Reads a candidate child's frames as they arrive and builds the verdict."""

    def __init__(self, task: Task, ref: ReferenceRun, plan: Plan, options: TritonEvaluatorOptions,
                 gating: Gating, timing_wanted: bool, run_child: Any, live: Any = None,
                 prepare_timing: Callable[[ReferenceRun], tuple[Any, str]] | None = None,
                 timing_seed: Callable[[ReferenceRun], int | None] | None = None,
                 loop: dict[str, Any] | None = None) -> None:
        self.task = task
        self.ref = ref
        # A PendingReference while the reference still runs beside this child: ``ref`` is its
        # provisional run; each comparison waits for its output, and timing for the whole
        # run, which then replaces ``ref``.
        self.live = live
        self.reference_wait_s = 0.0  # time this child was kept waiting for the reference
        self._reference_lock = threading.Lock()
        self.plan_broken = ""  # why the finished reference's plan is not the one this child ran
        self.decided_alone = False  # failed before needing the reference (failed_alone)
        self.plan = plan
        self.options = options
        self.gating = gating
        self.timing_wanted = timing_wanted
        self.run_child = run_child
        self.cases: dict[str, Case] = {c.name: c for c in ref.cases}
        self.verdict = Verdict()
        self.timing_errors = Verdict()  # failures while timing: no speed, but still correct
        self.runs: list[dict[str, Any]] = []  # digests, or whole frames when a custom compare needs them
        self.timings: list[dict[str, Any]] = []  # one record per timed case (timing_session.run_session)
        # Makes the reference's timed outputs and the baseline's timer ready: (timer, why not).
        self.prepare_timing = prepare_timing
        # The seed the reference's timed runs are (or will be) on, known before they are done:
        # the child draws its timed inputs on it while the judge prepares the rest.
        self.timing_seed = timing_seed
        self._prepare_sent: int | None = None  # the seed of the 'prepare' already sent
        self._timing_abandoned = False  # 'prepare' sent, then not timed after all
        self.loop = loop or {}
        self.timer: Any = None
        self._timer_held = False  # given a timer by prepare_timing, not yet released
        self.untimed = ""  # why a correct candidate was not timed (not its fault)
        self.timing_inbox: queue.Queue[Any] = queue.Queue()
        self._session: threading.Thread | None = None
        self.imported = self.aborted = self.failed_run = False
        self.current: dict[str, Any] | None = None
        self.checked_at: float | None = None
        self.timing_granted = False
        self.replier: Replier | None = None
        self.judge_error: JudgeError | None = None
        self._settled = False
        self._final: Verdict | None = None
        self.started = time.monotonic()
        self._budgeted = False
        self.phases: dict[str, float] = {"runs": 0.0, "compare": 0.0}  # child's run time, judge's compare time
        self.autotune = AutotuneLog()
        self.comparisons = Comparisons(self._compare_run)

    def __call__(self, message: Any, replier: Replier) -> Any:
        self.replier = replier
        if not self._budgeted and (self.live is None or getattr(self.live, "lazy", False)):
            self._apply_budget()  # a recorded table (LazyReference) holds the reference's own seconds
        if "start" not in self.phases:  # the child's start: its process, the task and its harness
            self.phases["start"] = time.monotonic() - self.started
        try:
            return self.handle(message)
        except JudgeError as exc:  # kept for the judge's thread; the child is told to stop
            if self.judge_error is None:
                self.judge_error = exc
            replier.send(ABORT)
            return None

    # -- frames -------------------------------------------------------------

    def on_setup_error(self, frame: dict[str, Any]) -> Any:
        raise JudgeError(f"the harness of {self.task.key} failed in the candidate's process: "
                         f"{describe_exception(frame)}\n{frame.get('error', '')}")

    def on_import_error(self, frame: dict[str, Any]) -> Any:
        self.verdict.fail("import", f"importing the candidate failed: {describe_exception(frame)}",
                          frame.get("error"))
        return frame

    def on_imported(self, frame: dict[str, Any]) -> Any:
        self.phases["start_and_import"] = time.monotonic() - self.started
        self.phases["import"] = float(frame.get("import_s") or 0.0)
        self.imported = True
        self.aborted = bool(frame.get("contract") or frame.get("violations"))
        contract.report(self.verdict, frame.get("contract", []))
        tampering.report(self.verdict, "at import", frame.get("violations", []), once=False)
        assert self.replier is not None
        # Each case it runs can be a new key for each of its autotuners: time for those.
        timed = [c.name for c in self.ref.timed] if self.timing_wanted else []
        self.autotune.cases = planned_cases(self.plan, timed)
        allow_for(self.replier, read_autotuners(frame.get("autotuners")), self.autotune.cases,
                  self.options.autotune_allowance_s, self.options.autotune_allowance_max_s)
        self.replier.send(ABORT if self.aborted else dict(self.plan))
        return frame

    def on_autotune(self, frame: dict[str, Any]) -> Any:
        """One of its kernels starts tuning a key it has not seen (its configs benchmarked)."""
        self.autotune.started(frame)
        return frame

    def on_autotuned(self, frame: dict[str, Any]) -> Any:
        self.autotune.ended(frame)
        return frame

    def on_start(self, frame: dict[str, Any]) -> Any:
        self._raise_comparison_error()  # the child is stopped rather than let run on
        self.current = frame
        live = self.live
        if getattr(live, "lazy", False) and frame.get("seed") not in live.fixed:
            live.need()  # on this seed the reference may fail too: it must run before the verdict
        if self.plan.get("gate"):
            assert self.replier is not None
            if self.gating.shared_runs:
                self.gating.hold_shared(self.replier)
            self.replier.send(GO)
        return frame

    def on_compiling(self, frame: dict[str, Any]) -> Any:
        """A compile inside the run: CPU work, the device is free for the others meanwhile;
        the child asks for it again (``start`` with ``resume``) before its kernel runs."""
        self.gating.release()
        return frame

    def on_error(self, frame: dict[str, Any]) -> Any:
        if frame.get("stage") == "timing":  # the timing session reads it
            self.timing_inbox.put(frame)
            return frame
        self.gating.release()
        self.failed_run = True
        rerun = " (second run of the determinism check)" if frame.get("rerun") else ""
        self.verdict.fail("run", f"{where(frame)}{rerun} raised {describe_exception(frame)}", frame.get("error"))
        return frame

    def on_ran(self, frame: dict[str, Any]) -> Any:
        """The run is over, its outputs on the host: the device is free while they travel."""
        self.gating.release()
        return frame

    def on_run(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        self.current = None
        self._check_guards(frame, frame.get("checks", {}))
        if "rerun_checks" in frame:
            self._check_guards(frame, frame["rerun_checks"])
        if output_objects.rejects_outputs(frame.get("checks")) or output_objects.rejects_outputs(
                frame.get("rerun_checks")):
            # Not what the call computed (the check has rejected it): nothing to compare.
            digest = {k: v for k, v in frame.items() if k not in ("outputs", "rerun")}
            digest.update(outputs={}, compared={"mismatches": []})
            self.runs.append(digest)
            return digest
        if self.ref.custom_compare:
            self.runs.append(frame)  # the harness hook needs the outputs themselves
            return {k: v for k, v in frame.items() if k not in ("outputs", "rerun")}
        # Compared in the background as the frames arrive, only the findings kept: a GPU
        # task's outputs would otherwise pile up in memory until the child ends.
        digest = {k: v for k, v in frame.items() if k not in ("outputs", "rerun")}
        self.phases["runs"] += float(frame.get("run_s") or 0.0)
        self.runs.append(digest)
        beside = self.live is not None
        assert self.replier is not None
        with self.replier.judge_waiting():  # no room: the child waits for the judge
            waited = self.comparisons.put(frame, digest)
        if beside:
            self.reference_wait_s += waited
        return digest

    def _compare_run(self, frame: dict[str, Any], digest: dict[str, Any]) -> None:
        """One run against its reference output (the comparison thread)."""
        if self.live is not None:
            self._await_output((frame["stage"], frame["case"], frame["seed"]))
        began = time.monotonic()
        try:
            digest["compared"] = compare_frame(self.task, self.ref, self.cases, frame, None,
                                               self.options.noise_multiple)
        except JudgeError as exc:
            digest["compared"] = {"judge_error": str(exc)}
        self.phases["compare"] += time.monotonic() - began

    def _raise_comparison_error(self) -> None:
        error = self.comparisons.error
        if error is not None:
            raise error

    def _await_comparisons(self) -> None:
        """Every run compared (the child waits meanwhile, not on its clock)."""
        waiting = self.replier.judge_waiting() if self.replier is not None else contextlib.nullcontext()
        with waiting:
            self.comparisons.drain()
        self._raise_comparison_error()

    def on_checked(self, frame: dict[str, Any]) -> Any:
        """Every run is done: compare what is left, then grant timing to a correct candidate."""
        self.checked_at = time.monotonic()
        assert self.replier is not None
        self.phases["send"] = float(frame.get("sent_s") or 0.0)
        self.phases["wait"] = float(frame.get("waited_s") or 0.0)
        if self.live is not None:
            self.reference_finished()
            if self.plan_broken:
                self.comparisons.close()
                self.replier.send(ABORT)  # the judge runs the candidate again on the new plan
                return frame
        self._await_comparisons()
        self.settle()
        if self.verdict.failures or not self.timing_wanted:
            self.replier.send(ABORT)
            return frame
        if self.prepare_timing is not None:
            began = time.monotonic()
            planned = self.timing_seed(self.ref) if self.timing_seed is not None and self.ref.timed else None
            if planned is not None:
                # The seed first, with the device not held: the child draws its timed inputs on
                # the host (Harness.prefetch) while the reference's timed runs and the
                # baseline's timer are made ready, then says it is prepared.
                self._prepare_sent = planned
                self.replier.send({"prepare": {"seed": planned}})
            with self.replier.judge_waiting():  # the reference's timed runs, the baseline's timer
                self.timer, self.untimed = self.prepare_timing(self.ref)
                self._timer_held = self.timer is not None
            self.phases["timing_wait"] = time.monotonic() - began
        if self.untimed or self.timer is None or self.ref.timing_seed is None or not self.ref.timed:
            self.untimed = self.untimed or "the reference could not be timed"
            self._abandon_timing()
            return frame
        if self._prepare_sent is not None:
            if self._prepare_sent != self.ref.timing_seed:  # cannot happen: the store's own seed
                self.untimed = "the reference was timed on another seed than the one prepared"
                self._abandon_timing()
            return frame  # on_prepared goes on
        # The seed first, with the device not held: the child draws its inputs on the host
        # (Harness.prefetch), then says it is prepared.
        self.replier.send({"prepare": {"seed": self.ref.timing_seed}})
        return frame

    def _abandon_timing(self) -> None:
        """No timing after all: the child is told to stop (after its 'prepared', if it was
        sent a 'prepare'), and the baseline's timer given back."""
        assert self.replier is not None
        self._timing_abandoned = True
        self._release_timer()
        self.replier.send(ABORT)

    def on_prepared(self, frame: dict[str, Any]) -> Any:
        assert self.replier is not None
        if self._timing_abandoned:  # it was told to stop meanwhile (the ABORT answers this frame)
            return frame
        self.phases["prepare"] = float(frame.get("prepare_s") or 0.0)
        self.gating.hold_exclusive(self.replier)
        self.timing_granted = True
        self.replier.send({"time": {"seed": self.ref.timing_seed}})
        self._session = threading.Thread(target=self._time, name="geak-timing", daemon=True)
        self._session.start()
        return frame

    def _time(self) -> None:
        """The timing session (its own thread: the child's answers come through this reader)."""
        from geak_evaluator_triton.timing_session import (
            RemoteSide,
            TimingError,
            calling_cpu,
            run_session,
            timing_cpus,
        )

        assert self.replier is not None
        timer = self.timer
        candidate = RemoteSide(self.replier, self.timing_inbox, True, "the candidate")
        pinned: list[Any] = []
        try:
            with timer.lock:
                baseline = RemoteSide(timer.frames.replier, timer.frames.inbox, False, "the baseline's timer",
                                      timer_answer_s(timer.frames.estimates, self.options.reference_timeout_s),
                                      stoppable=self.options.pause_baseline)
                if self.options.pin_timing_cpus and hasattr(os, "sched_setaffinity"):
                    cpus = timing_cpus(self.gating.slot.env)
                    cpu = calling_cpu(cpus)
                    pinned = [timer.frames.replier, self.replier]
                    # every thread on the session's CPUs but the calling one's, which each
                    # side's calling thread is asked to take alone as a case starts
                    moved = sum(replier.pin_child(cpus - {cpu} if cpu is not None else cpus)
                                for replier in pinned)
                    baseline.cpu = candidate.cpu = cpu
                    self.phases["timing.cpus"] = float(len(cpus))
                    self.phases["timing.pinned_threads"] = float(moved)
                try:
                    baseline.ask({"session": {"flush_bytes": self.loop.get("flush_bytes", 0),
                                              "sample": not self.ref.custom_compare}}, "session_ready")
                    self.timings, problem = run_session(self.ref, self.options, self.loop, baseline, candidate,
                                                        int(self.ref.timing_seed), timer.frames.estimates,
                                                        self.timing_errors)
                except TimingError as exc:
                    problem = str(exc)
                if problem:
                    self.untimed = problem
                    timer.close()  # in an unknown state: the next session starts another
                else:
                    timer.frames.replier.send({"done": True})
        except Exception as exc:  # the judge's own failure: no speed, said why
            self.untimed = f"timing failed in the judge: {type(exc).__name__}: {exc}"
        finally:
            for replier in pinned:  # back on every CPU the judge may use
                replier.pin_child(None)
            self.replier.send({"done": True})
            self.gating.release()
            self._release_timer()

    def _release_timer(self) -> None:
        """The baseline's timer is no longer this candidate's (once)."""
        timer, self._timer_held = (self.timer if self._timer_held else None), False
        if timer is not None:
            timer.release()

    def on_other(self, frame: dict[str, Any]) -> Any:
        """Timing frames (``case_ready``, ``block``, ``case_done``) go to the session; only
        what the verdict needs of them is kept."""
        if frame.get("kind") in ("case_ready", "block", "case_done"):
            self.timing_inbox.put(frame)
            return {"kind": frame["kind"]}
        return None

    def on_verified(self, frame: dict[str, Any]) -> Any:
        """The whole outputs the candidate kept of its timed calls, sent after the session
        (the device is given back first); each case's record counts what arrived."""
        from geak_evaluator_triton.timing_session import timings_of

        kept = frame.get("cases") if isinstance(frame.get("cases"), dict) else {}
        for record in self.timings:
            arrived = list(kept.get(record["case"]) or [])
            # A case timed twice (timing_session.run_session): the child kept the first
            # timing's copies first; the second takes the rest.
            timed = timings_of(record)
            for index, part in enumerate(timed):
                tally = part["tallies"]["other"]
                mine = arrived if index == len(timed) - 1 else arrived[:tally.deferred]
                arrived = arrived[len(mine):]
                tally.verified += [(int(number), outputs) for number, outputs in mine]
                tally.received += len(mine)
        return {"kind": "verified"}

    # -- a reference running beside this child ----------------------------------

    def _await_output(self, index: tuple[str, str, int]) -> None:
        """Until the reference has the output ``index`` (the comparison thread: the child
        goes on meanwhile, so none of this wait is the child's)."""
        live = self.live
        if live is not None and live.wait_output(index):
            return
        self.reference_finished(blocking=False)  # raises the reference's failure
        if self.plan_broken:  # the child is stopped; the judge runs the candidate again
            raise JudgeError(self.plan_broken)
        if index not in self.ref.outputs:
            raise JudgeError(f"the reference of {self.task.key} has no output for {index[0]} case "
                             f"{index[1]!r} seed {index[2]}")

    def reference_finished(self, blocking: bool = True) -> None:
        """Wait for the whole reference run and put it in place of the provisional one; notes
        in ``plan_broken`` whether this child ran (and would be timed on) another plan.
        ``blocking``: the child (or the verdict) waits meanwhile, so the wait is the
        reference's and not on the child's clock; not so in the comparison thread."""
        with self._reference_lock:
            if self.live is None:
                return
            live, provisional = self.live, self.ref
            if getattr(live, "lazy", False) and not live.started:
                # It never needed the reference: decided on the recorded table when it failed
                # (or did not finish its plan), which it did on a fixed seed at the latest.
                live.decided = bool(self.verdict.failures) or self.checked_at is None
            began = time.monotonic()
            waiting = (self.replier.judge_waiting() if blocking and self.replier is not None
                       else contextlib.nullcontext())
            try:
                with waiting:
                    final = live.wait_done()
            except JudgeError:
                raise
            except BaseException as exc:  # the judge's thread reports it as it is (wait_done again)
                raise JudgeError(f"the reference of {self.task.key} failed: {type(exc).__name__}: {exc}") from exc
            finally:
                if blocking:
                    self.reference_wait_s += time.monotonic() - began
            self.plan_broken = plan_change(provisional, final, self.options, self.timing_wanted)
            if not self.plan_broken:
                self.ref = final
            self.live = None
            self._apply_budget(final)

    def failed_alone(self, sandbox: SandboxResult) -> bool:
        """Beside a reference still running: the child failed (at import, by the contract or a
        guard, raising, crashing or running out of time) before any run of it produced
        outputs to compare, in its first run at the latest, which is on the task's own first
        seed: its verdict is what it is whatever the reference gives (a reference redone on
        that seed alone keeps it). The verdict is then settled here (``finish``)."""
        if self.judge_error is not None or self.comparisons.error is not None or self.runs:
            return False
        current = self.current
        if current is not None and current.get("seed") != self.ref.seeds[0]:
            return False
        try:
            verdict = self.finish(sandbox)
        except JudgeError:
            return False
        self.decided_alone = bool(verdict.failures)
        return self.decided_alone

    def _apply_budget(self, ref: ReferenceRun | None = None) -> None:
        """The child's timeout becomes its budget (reference_run.candidate_budget), once the
        task's reference is known."""
        if self.replier is None:
            return
        self._budgeted = True
        budget, note = candidate_budget(ref or self.ref, self.options.timeout_s, self.options.budget_scale,
                                        self.options.budget_floor_s)
        if note:
            self.replier.set_limit(budget, note)

    # -- verdict --------------------------------------------------------------

    def settle(self) -> None:
        """Fold the comparisons (custom hooks included) into the verdict; idempotent."""
        if self._settled:
            return
        self._settled = True
        custom: dict[int, Any] = {}
        if self.ref.custom_compare and self.runs:
            custom = custom_compare(self.task, self.ref, self.runs, self.cases, self.run_child)
        for index, frame in enumerate(self.runs):
            found = frame.get("compared")
            if found is None:
                found = compare_frame(self.task, self.ref, self.cases, frame, custom.get(index),
                                      self.options.noise_multiple)
            if "judge_error" in found:
                raise JudgeError(found["judge_error"])
            at = where(frame)
            determinism.report(self.verdict, at, found)
            mismatches = found["mismatches"]
            if mismatches:
                stage = frame["stage"]
                if not self.verdict.has(stage):
                    detail = mismatches[0]["message"]
                    self.verdict.fail(stage, f"{at}: {detail}" + (
                        f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""),
                        mismatches=[{**m, "stage": stage, "case": frame["case"], "seed": frame["seed"]}
                                    for m in mismatches])
        if self.ref.custom_compare:
            self.runs = [{k: v for k, v in f.items() if k not in ("outputs", "rerun")} for f in self.runs]

    def finish(self, sandbox: SandboxResult) -> Verdict:
        """The correctness verdict once the child has ended (timing frames are read elsewhere);
        asked again, the same verdict."""
        if self._final is not None:
            return self._final
        if self._session is not None:  # the child has ended: a session still waiting learns it
            from geak_evaluator_triton.timing_session import END, with_exit

            self.timing_inbox.put(END)
            self._session.join()
            ended = self.exit_text(sandbox)  # a session cut short by the child's end says how it ended
            for failure in self.timing_errors.failures:
                failure.reason = with_exit(failure.reason, ended)
            self.untimed = with_exit(self.untimed, ended)
        self._release_timer()  # a candidate that ended before its session
        self.gating.release()
        self.comparisons.drain()
        self.comparisons.close()
        if self.judge_error is None and isinstance(self.comparisons.error, JudgeError):
            self.judge_error = self.comparisons.error
        if self.judge_error is not None:
            raise self.judge_error
        self._raise_comparison_error()
        complete = (self.imported and not self.aborted and not self.failed_run
                    and (sandbox.completed or self.checked_at is not None)
                    and len(self.runs) >= expected_runs(self.ref, self.plan))
        verdict = self.verdict
        if not self.imported and not verdict.has("import"):
            verdict.fail("import", f"the candidate's process {sandbox.describe_exit()} while importing it",
                         tail(sandbox.stderr, 4000) or None)
        elif self.imported and not self.aborted and not self.failed_run and not complete:
            location = f" during {where(self.current)}" if self.current else ""
            verdict.fail("run", f"the candidate's process {self.exit_text(sandbox)}{location}",
                         tail(sandbox.stderr, 4000) or None)
        if complete:
            self.settle()
        verdict.ran = complete
        self.phases.update(self.autotune.phases())
        self._final = verdict
        return verdict

    def exit_text(self, sandbox: SandboxResult) -> str:
        """How the child ended, and what it was autotuning if it ran out of time then."""
        tuning = self.autotune.during() if sandbox.timed_out else ""
        return f"ran out of time {tuning} ({sandbox.describe_exit()})" if tuning else sandbox.describe_exit()

    def _check_guards(self, frame: dict[str, Any], checks: RunChecks) -> None:
        """Guard findings of one run; each kind of finding is reported once, where first seen."""
        when = f"during {where(frame)}"
        output_objects.report(self.verdict, when, checks.get("objects", []))
        tampering.report(self.verdict, when, checks.get("violations", []))
        input_mutation.report(self.verdict, when, checks.get("mutated", []))
        torch_compute.report(self.verdict, when, checks.get("compute", []), self.task)
        launches.report_run(self.verdict, when, checks.get("launches", {}))
