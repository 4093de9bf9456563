"""The baseline's timer: a trusted child per task and device that times the baseline.

A candidate is timed against the task's baseline (the reference, or its
``timing_baseline``), call block by call block. The baseline never runs in
the candidate's process: there, the candidate's code could reach it (Triton's
launch hooks, a kernel's ``pre_run_hooks``, monkeypatched torch functions)
and slow it down. It runs here, in a child that imports the harness and the
baseline and no candidate code, under the reference's Triton cache, and that
is paused never: the candidate's process group is stopped while the baseline
runs (``timing_loop``).

One timer serves every candidate of its task on its device, one at a time
(timing holds the device exclusively): it starts when the task first needs
timing, imports and warms the baseline once (each timed case called once on
seed A: compiled, autotuned, one call timed for the case weights) while the
device is held shared, then waits. Each timing session asks it per case to
draw its inputs and warm up, then for blocks of timed calls
(``timed_calls.serve``); between sessions it holds no inputs on the device.
At most ``TIMERS_PER_DEVICE`` are kept per device; the least recently used
one that nobody uses is closed to make room. A timer is in use from the moment
a correct candidate is given it (``TimerPool.start``) until that candidate's
session is over (``TimerChild.release``): closing a timer between the two left
a session, holding the device exclusively, waiting on a timer that was gone
(eight ROCm tasks' judgements, three at once with two baselines each, stalled
every other verdict on the device for two minutes). When every timer of the
device is in use, one more is started rather than one closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
import time
from collections import OrderedDict
from typing import Any

from geak_core.api.tasks import Task

from geak_evaluator_triton.candidate_run import Gating
from geak_evaluator_triton.child_pool import Children, task_payload
from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.protocol import GO, FrameHandler
from geak_evaluator_triton.reference_run import ReferenceRun
from geak_evaluator_triton.timing_session import END
from geak_evaluator_triton.verdict import describe_exception

ENTRY = "geak_evaluator_triton.baseline_timer:timer_job"
TIMERS_PER_DEVICE = 2
LIFETIME_S = 7 * 24 * 3600.0  # the timer's own wall-clock limit: requests have their own deadlines


class TimerFrames(FrameHandler):
    """The timer child's frames: its warm-up gated like a reference's run, then every timing
    frame into ``inbox`` for the session that asked."""

    def __init__(self, gating: Gating, warm_budget_s: float = 0.0) -> None:
        self.gating = gating
        self.warm_budget_s = warm_budget_s  # seconds the child may take to get warm (0: no limit)
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.replier: Any = None
        self.ready = threading.Event()
        self.problem = ""
        self.estimates: dict[str, float] = {}
        self.warm_s = 0.0

    def __call__(self, message: Any, replier: Any) -> Any:
        self.replier = replier
        return self.handle(message)

    def on_start(self, frame: dict[str, Any]) -> Any:
        if frame.get("stage") == "warm-up" and not frame.get("resume") and self.warm_budget_s:
            # The warm-up (import, compiles, autotuning, one call a case) has a budget, as a
            # reference's run has: a timer that never gets warm is ended, not waited for.
            self.replier.set_limit(self.warm_budget_s, "the baseline's warm-up budget")
        if self.gating.shared_runs:  # trusted like a reference child: not capped
            self.gating.hold_shared(self.replier, capped=False)
        self.replier.send(GO)
        return frame

    def on_compiling(self, frame: dict[str, Any]) -> Any:
        """A compile in the warm-up (an autotuner's configs, say): CPU work, so the device is
        free meanwhile; the child asks again (``start``, ``resume``) before it runs. Held
        through minutes of compiling, it kept every correct candidate of the device from
        its timing (three files judged at once on one host: no verdict for 400 s)."""
        self.gating.release()
        return frame

    def on_warmed(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        self.replier.set_limit(LIFETIME_S)  # warm: requests have their own deadlines
        self.estimates = dict(frame.get("estimates") or {})
        self.warm_s = float(frame.get("warm_s") or 0.0)
        self.ready.set()
        return frame

    def on_setup_error(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        self.problem = f"the timing baseline failed its warm-up: {describe_exception(frame)}"
        self.ready.set()
        return frame

    def on_other(self, frame: dict[str, Any]) -> Any:
        self.inbox.put(frame)
        return {k: v for k, v in frame.items() if k not in ("verified", "samples", "outputs")}

    def on_ran(self, frame: dict[str, Any]) -> Any:
        """A run of the reference's timed outputs is over, its outputs on the host."""
        self.gating.release()
        return frame

    def on_run(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        return self.on_other(frame)

    def on_error(self, frame: dict[str, Any]) -> Any:
        self.gating.release()  # a run that raised holds nothing (a session's error held nothing)
        self.inbox.put(frame)
        return frame


class TimerChild:
    """One timer: its child's thread, its frames, and who is using it."""

    def __init__(self, key: str, children: Children, task: Task, runtime: Runtime, slot: Slot,
                 ref: ReferenceRun, warm_budget_s: float = 0.0, timing_seed: int | None = None) -> None:
        self.key = key
        self.task = task
        self.device = slot.label.split(" (")[0]
        self.lock = threading.Lock()  # held by the session using it
        self.frames = TimerFrames(Gating(slot, shared_runs=runtime.shares_device(slot)), warm_budget_s)
        self.started = time.monotonic()
        self.last_used = time.monotonic()
        self.exit = ""
        self._closed = False
        self.users = 0  # candidates given this timer whose session is not over (TimerPool's lock)
        self.pool_lock: threading.Lock | None = None
        # seed A warms the baseline; the sessions time it on the timing seed (both sides'
        # inputs alike, timing_session.run_session), whose host-side work it does up front too
        args = {"task": task_payload(task), "case_set": runtime.case_set, "seed": ref.seeds[0],
                "timing_seed": timing_seed, "cases": [c.name for c in ref.timed]}

        def run() -> None:
            try:
                result = children.run(ENTRY, args, slot.env, timeout=LIFETIME_S, cache="reference",
                                      on_message=self.frames)
                self.exit = result.describe_exit() + (("\n" + result.stderr[-2000:]) if result.stderr else "")
            except Exception as exc:  # the judge's own failure: the session reports it
                self.exit = f"{type(exc).__name__}: {exc}"
            finally:
                self.frames.gating.release()
                if not self.frames.ready.is_set():
                    self.frames.problem = self.frames.problem or f"the baseline's timer ended: {self.exit}"
                    self.frames.ready.set()
                self.frames.inbox.put(END)

        self.thread = threading.Thread(target=run, name="geak-timer", daemon=True)
        self.thread.start()

    def wait_ready(self, timeout_s: float) -> str:
        """Until the baseline is warm: "" then, else why it cannot time."""
        if not self.frames.ready.wait(timeout_s):
            return f"the baseline's timer was not warm after {timeout_s:.0f} s"
        return self.frames.problem

    @property
    def alive(self) -> bool:
        return self.thread.is_alive() and not self._closed

    def reference_outputs(self, seed: int, cases: list[str], timeout_s: float
                          ) -> tuple[dict[tuple[str, str, int], Any], dict[str, str], str]:
        """The reference's outputs for the timed ``cases`` on ``seed`` (the secret timing seed),
        run in this warm timer (its baseline is the reference: the task has no
        ``timing_baseline``), as a reference child's ``timing`` stage would give them, without
        a second reference process (its start, imports, compiles and autotuning again).

        Returns (outputs keyed ("timing", case, seed), cases the reference raised on, why it
        could not finish: "" when it did). A timer that does not finish within ``timeout_s``
        is ended, so no later session reads its frames."""
        from geak_evaluator_triton.reference_store import _ReferenceFrames

        reader = _ReferenceFrames(self.task)  # as a reference child's timing-stage frames are read
        with self.lock:
            if not self.alive or self.frames.replier is None:
                return {}, {}, f"the baseline's timer ended: {self.exit}"
            self.frames.replier.send({"reference_outputs": {"seed": int(seed), "cases": list(cases)}})
            deadline = time.monotonic() + timeout_s
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    why = f"the reference's timed outputs were not done in {timeout_s:.0f} s"
                    self._end(why)
                    return reader.outputs, reader.untimed, why
                try:
                    frame = self.frames.inbox.get(timeout=min(left, 1.0))
                except queue.Empty:
                    continue
                if frame is END:
                    return reader.outputs, reader.untimed, f"the baseline's timer ended: {self.exit}"
                if isinstance(frame, dict) and frame.get("kind") == "reference_outputs_done":
                    return reader.outputs, reader.untimed, ""
                reader.handle(frame)

    def _end(self, why: str) -> None:
        """End the child now (its limit set to zero) and keep it out of the pool."""
        self._closed = True
        self.exit = self.exit or why
        if self.frames.replier is not None:
            self.frames.replier.set_limit(0.0, why)

    def release(self) -> None:
        """One user is done with this timer (its session is over, or it will not time)."""
        with self.pool_lock or contextlib.nullcontext():
            self.users = max(0, self.users - 1)

    def close(self) -> None:
        self._closed = True
        if self.frames.replier is not None:
            self.frames.replier.send({"exit": True})
            self.frames.replier.close()
        self.thread.join(timeout=10)


class TimerPool:
    """Timers by (task, seed A, device); at most TIMERS_PER_DEVICE kept per device."""

    def __init__(self, children: Children) -> None:
        self.children = children
        self._lock = threading.Lock()
        self._timers: OrderedDict[str, TimerChild] = OrderedDict()

    @staticmethod
    def key(reference_key: str, ref: ReferenceRun, slot: Slot) -> str:
        blob = f"{reference_key}|{ref.seeds[0]}|{[c.name for c in ref.timed]}|{slot.env}"
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def start(self, reference_key: str, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
              use: bool = True, warm_budget_s: float = 0.0, timing_seed: int | None = None) -> TimerChild:
        """The task's timer on ``slot``'s device, started now if there is none; with ``use``,
        in use by the caller until it calls ``release`` (else started to warm up only).
        ``warm_budget_s``: a new timer not warm by then is ended (0: no limit)."""
        key = self.key(reference_key, ref, slot)
        closing: list[TimerChild] = []
        with self._lock:
            timer = self._timers.get(key)
            if timer is not None and timer.alive:
                self._timers.move_to_end(key)
                timer.last_used = time.monotonic()
                timer.users += int(use)
                return timer
            self._timers.pop(key, None)
            timer = TimerChild(key, self.children, task, runtime, slot, ref, warm_budget_s, timing_seed)
            timer.pool_lock = self._lock
            timer.users = int(use)
            self._timers[key] = timer
            same_device = [t for t in self._timers.values() if t.device == timer.device and t is not timer]
            while len(same_device) >= TIMERS_PER_DEVICE:
                idle = next((t for t in same_device if t.users == 0 and not t.lock.locked()), None)
                if idle is None:
                    break
                same_device.remove(idle)
                self._timers.pop(idle.key, None)
                closing.append(idle)
        for old in closing:
            old.close()
        return timer

    def close(self) -> None:
        with self._lock:
            timers, self._timers = list(self._timers.values()), OrderedDict()
        for timer in timers:
            timer.close()


# ---------------------------------------------------------------------------
# Child side (a trusted process: harness and baseline only)
# ---------------------------------------------------------------------------


def module_file(module: Any) -> str:
    return os.path.abspath(getattr(module, "__file__", "") or "")


def instrumented(task: Any, module: Any, log: Any) -> tuple[Any, Any]:
    """The baseline's entry points as the candidate's child times the candidate's: under the
    same compute monitor (``torch_compute``) and launch log, whose findings are dropped
    (``drain``, called after every block). Both sides of a timing then pay the same host cost
    per call for the judge's instruments: with the monitor on the candidate's side only, a
    reference timed against itself read slower as the candidate wherever the host's path
    showed in the timed span (calls that wait for the device; KernelBench-X's avg_pool1d
    0.06x, fused_log_tanh 0.61x on an H200). A baseline whose entry points cannot be wrapped
    is timed bare."""
    from geak_evaluator_triton.checks.torch_compute import ComputeMonitor, guard_entry_points
    from geak_evaluator_triton.child_jobs import is_interpreter

    try:
        monitor = ComputeMonitor.for_entry_points(module_file(module), task.entry_points, gpu=not is_interpreter())
        guarded = guard_entry_points(module, task.entry_points, monitor)
    except Exception:
        return module, None
    log.inside_entry_point = lambda: monitor.depth > 0

    def drain() -> dict[str, Any]:
        monitor.take()
        del log.launches[:]
        return {}

    return guarded, drain


def timer_job(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Import and warm the baseline, then time it for every session the judge opens."""
    import torch

    from geak_evaluator_triton.child_jobs import (
        COMPILE_RELEASE,
        REFERENCE_MODULE,
        _case_table,
        error_frame,
        import_file,
        load_harness,
        load_task,
        prefetch,
        resolve_reference,
        setup_runtime,
    )
    from geak_evaluator_triton.timed_calls import TimedSide, cycles_per_us, serve, warm_module

    log = setup_runtime()
    task = load_task(args["task"])
    seed = int(args["seed"])
    try:
        harness = load_harness(task)
        cases = {c.name: c for c in _case_table(harness, args["case_set"])}
        timing_seed = args.get("timing_seed")
        for name in args["cases"]:
            prefetch(harness, cases[name], seed)
            if timing_seed is not None and int(timing_seed) != seed:
                prefetch(harness, cases[name], int(timing_seed))
    except Exception as exc:
        channel.send(error_frame("setup_error", exc))
        return {"ok": False}
    where = {"stage": "warm-up", "case": "*", "seed": seed}
    channel.send({"kind": "start", **where})
    if channel.receive().get("abort"):
        return {"ok": False}
    COMPILE_RELEASE.install()  # the device is let go while the baseline compiles and autotunes
    began = time.perf_counter()
    try:
        with COMPILE_RELEASE.during(channel, where):
            module = import_file(REFERENCE_MODULE, task.timing_baseline or resolve_reference(task, harness))
            estimates = warm_module(harness, task, module, [cases[n] for n in args["cases"]], seed)
    except Exception as exc:
        channel.send(error_frame("setup_error", exc, where="baseline warm-up"))
        return {"ok": False}
    channel.send({"kind": "warmed", "estimates": estimates, "warm_s": round(time.perf_counter() - began, 4)})
    side: TimedSide | None = None
    while True:
        command = channel.receive()
        if command.get("exit"):
            return {"ok": True}
        wanted = command.get("reference_outputs")
        if wanted is not None:
            _reference_outputs(channel, task, harness, module, cases, wanted)
            continue
        session = command.get("session")
        if session is None:
            continue
        if side is None:
            flush_bytes = int(session.get("flush_bytes") or 0)
            flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda") if flush_bytes else None
            timed, drain = instrumented(task, module, log)
            side = TimedSide(harness, timed, flush, cycles_per_us(), log=log, own_file=module_file(module),
                             keep_samples=False)
        # The baseline's calls are followed by the same gathers as the candidate's (their
        # values are not kept): a side whose calls are sampled read up to 6 % faster on
        # microsecond kernels than one whose calls are not (bench/timing_sides.py).
        side.sample = bool(session.get("sample"))
        channel.send({"kind": "session_ready"})
        if serve(channel, side, task, cases, checks=drain).get("exit"):
            return {"ok": True}


def _reference_outputs(channel: Any, task: Any, harness: Any, module: Any, cases: dict[str, Any],
                       wanted: dict[str, Any]) -> None:
    """Run the reference (this timer's baseline) once per timed case on the seed asked for, as
    a reference child's ``timing`` stage does (``child_jobs.run_plan``: each run gated, its
    outputs in a ``run`` frame, ``error`` for a case that raises), then
    ``reference_outputs_done``."""
    from geak_evaluator_triton.child_jobs import error_frame, run_plan

    seed = int(wanted["seed"])
    names = list(wanted.get("cases", []))
    present = [name for name in names if name in cases]
    # A reference child's timing stage alone, gated as its runs are; a case that raises is
    # an ``error`` frame of the timing stage and the next case runs.
    run_plan(task, harness, module, cases, {"seeds": [seed], "timing": present,
                                            "case_seeds": {"timing": {name: [seed] for name in present}},
                                            "gate": True}, channel, guard=None)
    for name in names:
        if name not in cases:
            channel.send(error_frame("error", KeyError(f"no case {name!r} in the timer's case table"),
                                     stage="timing", case=name, seed=seed))
    channel.send({"kind": "reference_outputs_done"})
