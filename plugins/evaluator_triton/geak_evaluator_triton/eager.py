"""Speedup against PyTorch eager: a task's torch equivalent, timed in a trusted child.

A task with a PyTorch eager equivalent says so in ``Task.eager``:

* ``"reference"``: its reference is PyTorch eager (KernelBench-X). Unless the task
  names a separate ``timing_baseline``, the candidate was timed against eager
  already: each shape's ``eager_ms`` is its ``reference_ms``.
* ``"harness"``: the harness's ``eager(case, inputs)`` computes the outputs with
  torch operators (``geak_core.api.harness.Harness.eager``).

Eager code never runs in the candidate's process, where a candidate could slow
down the torch operators it competes with. Once per task and judge, started
in the background when the first candidate of the task is checked (its
verdict waits for it only if its own timing ends first), a child of its own (the harness,
the timing baseline and the eager code; no candidate code) warms the baseline
and times eager against it with the candidate's own timing loop
(``timing_loop.time_case``: blocks of calls alternating, caches flushed,
medians; both on the secret timing seed), holding the
device exclusively. Its per-case ratio eager / baseline, measured side by side, scales
each timed shape of a verdict: ``eager_ms = reference_ms * ratio``. A shape's
speedup against eager is thus its speedup over the baseline, measured side by
side in the candidate's child, times that ratio: no latency measured in one
process is divided by one measured in another.

Eager's outputs of its last timed call are compared with the reference's for
the timing seed under the task's tolerances: an "equivalent" that computes
something else gives that case no eager latency, and the verdict's note says
why. A case whose ``eager`` raises ``NotImplementedError`` has no equivalent.
``speedup_vs_eager`` aggregates (by ``speedup_method``) over the shapes that
have an eager latency; the note names the others.

:meth:`EagerStore.check` runs eager once on a task's checked cases (under the
CPU interpreter too) and compares it with the reference's outputs:
``TritonEvaluator.check_reference`` reports what it finds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import HardwareProfile
from geak_core.api.model import EvalResult
from geak_core.api.scaling import eager_speedup
from geak_core.api.tasks import Case, Task

from geak_evaluator_triton.candidate_run import Gating
from geak_evaluator_triton.child_pool import Children, task_payload
from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.protocol import GO, FrameHandler
from geak_evaluator_triton.reference_run import ReferenceRun
from geak_evaluator_triton.reference_store import PendingReference, ReferenceStore
from geak_evaluator_triton.run_compare import (
    JudgeError,
    compare_outputs,
    custom_compare,
    overrides_for,
)
from geak_evaluator_triton.timing_session import timing_request
from geak_evaluator_triton.verdict import describe_exception

ENTRY = "geak_evaluator_triton.eager:eager_job"
EAGER_SOURCES = ("harness", "reference")
NO_EQUIVALENT = "the task has no PyTorch eager equivalent for this case"
EAGER_MODULE = "geak_eager"


# ---------------------------------------------------------------------------
# What a verdict gets
# ---------------------------------------------------------------------------


@dataclass
class EagerCase:
    """One case: eager's and the baseline's medians side by side, or why there are none."""

    eager_ms: float | None = None
    baseline_ms: float | None = None
    problem: str = ""

    @property
    def ratio(self) -> float | None:
        if self.problem or not self.eager_ms or not self.baseline_ms:
            return None
        return self.eager_ms / self.baseline_ms


@dataclass
class EagerTimes:
    """A task's eager measurement: per timed case, or why nothing was measured."""

    cases: dict[str, EagerCase] = field(default_factory=dict)
    problem: str = ""
    wall_s: float = 0.0


def apply_eager(result: EvalResult, times: EagerTimes) -> None:
    """Give each timed shape of ``result`` its eager latency and the verdict its
    ``speedup_vs_eager``; say in the note which shapes have none, and why."""
    missing = []
    for shape in result.shapes:
        case = times.cases.get(shape.case)
        ratio = case.ratio if case is not None else None
        if ratio is not None and shape.reference_ms:
            shape.eager_ms = shape.reference_ms * ratio
        elif shape.reference_ms and shape.candidate_ms:
            why = case.problem if case is not None and case.problem else times.problem or "not measured"
            missing.append(f"{shape.case} ({why})")
    result.speedup_vs_eager = eager_speedup(result.shapes, result.speedup_method)
    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        result.performance_note += "; no PyTorch eager latency for " + "; ".join(missing[:3]) + more


def eager_is_baseline(task: Task) -> bool:
    """The candidate was timed against PyTorch eager itself (the reference is eager)."""
    return task.eager == "reference" and not task.timing_baseline


# ---------------------------------------------------------------------------
# Judge side
# ---------------------------------------------------------------------------


class EagerStore:
    """Eager measurements, once per task, device and judge; never raises into a verdict."""

    def __init__(self, children: Children, references: ReferenceStore) -> None:
        self.children = children
        self.references = references
        self._lock = threading.Lock()
        self._times: dict[str, EagerTimes] = {}
        self._key_locks: dict[str, threading.Lock] = {}
        self._prefetching: set[str] = set()

    def apply(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
              profile: HardwareProfile | None, result: EvalResult) -> None:
        """Fill ``result``'s eager figures (a timed, correct verdict of a task with ``eager``)."""
        if eager_is_baseline(task):
            for shape in result.shapes:
                shape.eager_ms = shape.reference_ms
            result.speedup_vs_eager = eager_speedup(result.shapes, result.speedup_method)
            return
        if task.eager not in EAGER_SOURCES:
            apply_eager(result, EagerTimes(problem=f"unknown Task.eager {task.eager!r} "
                                                   f"(expected one of: {', '.join(EAGER_SOURCES)})"))
            return
        started = time.monotonic()
        try:
            times = self.get(task, runtime, slot, ref, profile)
        except Exception as exc:  # the candidate's verdict stands whatever happens here
            times = EagerTimes(problem=f"internal error: {type(exc).__name__}: {exc}")
        result.phases["eager"] = round(time.monotonic() - started, 3)
        apply_eager(result, times)

    def prefetch(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
                 profile: HardwareProfile | None, pending: PendingReference | None = None) -> None:
        """Start measuring in the background, while the task's first candidate is checked
        (its verdict then waits for the rest, if any); nothing when measured or under way.

        The child starts afresh rather than taking the slot's spare, which the
        candidate is about to use. ``pending``: the reference still runs and ``ref`` is
        its provisional run (from its case table): eager's child starts and times now,
        and its outputs are checked once the reference is done."""
        if eager_is_baseline(task) or task.eager not in EAGER_SOURCES:
            return
        key = self._key(task, runtime, ref)
        with self._lock:
            if key in self._times or key in self._prefetching:
                return
            self._prefetching.add(key)

        def measure() -> None:
            try:
                self._get(key, task, runtime, slot, ref, profile, use_spare=False, pending=pending)
            except Exception:  # apply() measures again and reports the problem in the verdict
                pass
            finally:
                with self._lock:
                    self._prefetching.discard(key)

        threading.Thread(target=measure, name="geak-eager", daemon=True).start()

    def get(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
            profile: HardwareProfile | None) -> EagerTimes:
        return self._get(self._key(task, runtime, ref), task, runtime, slot, ref, profile)

    def _key(self, task: Task, runtime: Runtime, ref: ReferenceRun) -> str:
        return f"{self.references.key(task, runtime)}:{ref.timing_seed}"

    def _get(self, key: str, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
             profile: HardwareProfile | None, use_spare: bool = True,
             pending: PendingReference | None = None) -> EagerTimes:
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._times:
                    return self._times[key]
            times = self._measure(task, runtime, slot, ref, profile, use_spare, pending)
            with self._lock:
                self._times[key] = times
            return times

    def _measure(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
                 profile: HardwareProfile | None, use_spare: bool = True,
                 pending: PendingReference | None = None) -> EagerTimes:
        started = time.monotonic()
        options = self.children.options
        sharing = runtime.shares_device(slot)
        request = timing_request(ref, options, profile)
        request["gate"] = sharing
        frames = EagerFrames(Gating(slot, shared_runs=sharing), ref.timing_seed)
        args = {"task": task_payload(task), "case_set": runtime.case_set, "timing": request}
        try:
            sandbox = self.children.run(ENTRY, args, slot.env, timeout=options.reference_timeout_s,
                                        cache="reference", on_message=frames,
                                        slot=slot if use_spare else None)
        finally:
            frames.gating.release()
        runs = [{"stage": "timing", "case": name, "seed": frame["seed"], "outputs": frame.get("outputs")}
                for name, frame in frames.timings.items() if frame.get("has_outputs")]
        measured = {name: (frame["candidate_ms"], frame["reference_ms"]) for name, frame in frames.timings.items()}
        if pending is not None:  # eager ran beside the reference: its outputs are checked now
            ref = pending.wait_done()
        times = self._judge(task, ref, ref.timed, frames, runs, measured, slot,
                            "" if sandbox.completed else sandbox.describe_exit())
        times.wall_s = time.monotonic() - started
        return times

    def check(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun) -> tuple[int, list[str]]:
        """Eager once per checked case (the reference's first seed of stage 1) against the
        reference's outputs: (cases compared, problems). Only a harness's ``eager`` is
        checked (a reference that is eager is what it is compared with)."""
        if task.eager != "harness":
            return 0, []
        cases = ref.checked
        plan = [[c.name, ref.plan_seeds("stage1", c)[0]] for c in cases]
        frames = EagerFrames(Gating(slot, shared_runs=False), None)
        args = {"task": task_payload(task), "case_set": runtime.case_set, "runs": plan}
        with slot.gate.shared():
            sandbox = self.children.run(ENTRY, args, slot.env, timeout=self.children.options.reference_timeout_s,
                                        cache="reference", on_message=frames, slot=slot)
        runs = [{"stage": "stage1", "case": name, "seed": frame["seed"], "outputs": frame["outputs"]}
                for name, frame in frames.runs.items()]
        times = self._judge(task, ref, cases, frames, runs, {}, slot,
                            "" if sandbox.completed else sandbox.describe_exit())
        if times.problem:
            return 0, [f"eager equivalent: {times.problem}"]
        problems = [f"eager equivalent, case {name!r}: {case.problem}" for name, case in times.cases.items()
                    if case.problem and case.problem != NO_EQUIVALENT]
        return sum(1 for run in runs if run["case"] in times.cases), problems

    def _judge(self, task: Task, ref: ReferenceRun, cases: list[Case], frames: EagerFrames,
               runs: list[dict[str, Any]], measured: dict[str, tuple[float, float]], slot: Slot,
               exit_problem: str) -> EagerTimes:
        """Per case: eager's outputs against the reference's, and its latencies if timed."""
        if frames.setup_problem:
            return EagerTimes(problem=f"the eager child failed: {frames.setup_problem}")
        by_name = {c.name: c for c in ref.cases}
        custom: dict[int, Any] = {}
        if ref.custom_compare and runs:
            try:
                custom = custom_compare(task, ref, runs, by_name, self.children.for_task(task, slot))
            except JudgeError as exc:
                return EagerTimes(problem=str(exc).splitlines()[0])
        index = {run["case"]: i for i, run in enumerate(runs)}
        times = EagerTimes()
        for case in cases:
            name = case.name
            if name in frames.problems:
                times.cases[name] = EagerCase(problem=frames.problems[name])
                continue
            if name not in index:
                times.cases[name] = EagerCase(problem="eager did not finish" + (f": {exit_problem}"
                                                                               if exit_problem else ""))
                continue
            run = runs[index[name]]
            expected = ref.outputs.get((run["stage"], name, run["seed"]))
            diffs = compare_outputs(expected, run["outputs"], overrides_for(task, case), custom.get(index[name]))
            if diffs:
                times.cases[name] = EagerCase(problem=f"eager's outputs differ from the reference's: "
                                                      f"{diffs[0]['message']}")
                continue
            eager_ms, baseline_ms = measured.get(name, (None, None))
            times.cases[name] = EagerCase(eager_ms, baseline_ms)
        return times


class EagerFrames(FrameHandler):
    """The eager child's frames: the device held as for a candidate (shared while the
    baseline warms up, exclusively while eager is timed), then eager's runs or timings."""

    def __init__(self, gating: Gating, timing_seed: int | None) -> None:
        self.gating = gating
        self.timing_seed = timing_seed
        self.replier: Any = None
        self.runs: dict[str, dict[str, Any]] = {}
        self.timings: dict[str, dict[str, Any]] = {}
        self.problems: dict[str, str] = {}
        self.setup_problem = ""

    def __call__(self, message: Any, replier: Any) -> Any:
        self.replier = replier
        return self.handle(message)

    def on_start(self, frame: dict[str, Any]) -> Any:
        if self.gating.shared_runs:  # the baseline's warm-up: trusted, like a reference child
            self.gating.hold_shared(self.replier, capped=False)
        self.replier.send(GO)
        return frame

    def on_warmed(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        return frame

    def on_checked(self, frame: dict[str, Any]) -> Any:
        self.replier.send({"prepare": {"seed": self.timing_seed}})
        return frame

    def on_prepared(self, frame: dict[str, Any]) -> Any:
        self.gating.hold_exclusive(self.replier)
        self.replier.send({"time": {"seed": self.timing_seed}})
        return frame

    def on_timing(self, frame: dict[str, Any]) -> Any:
        self.timings[frame["case"]] = frame
        return frame

    def on_timed(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        return frame

    def on_timing_outputs(self, frame: dict[str, Any]) -> Any:
        timing = self.timings.get(frame.get("case", ""))
        if timing is not None:
            timing["outputs"] = frame.get("outputs")
            timing["has_outputs"] = True
        return {k: v for k, v in frame.items() if k != "outputs"}

    def on_run(self, frame: dict[str, Any]) -> Any:
        self.runs[frame["case"]] = frame
        return {k: v for k, v in frame.items() if k != "outputs"}

    def on_error(self, frame: dict[str, Any]) -> Any:
        self.problems[frame.get("case", "")] = (NO_EQUIVALENT if frame.get("not_implemented")
                                                else f"eager raised {describe_exception(frame)}")
        return frame

    def on_setup_error(self, frame: dict[str, Any]) -> Any:
        self.gating.release()
        where = f" ({frame['where']})" if frame.get("where") else ""
        self.setup_problem = f"{describe_exception(frame)}{where}"
        return frame


# ---------------------------------------------------------------------------
# Child side (a trusted process: harness, baseline and eager code only)
# ---------------------------------------------------------------------------


class EagerHarness:
    """The task's harness, whose ``run`` of :data:`EAGER` calls its ``eager`` method: the
    timing loop and the checks run eager where they would run a module."""

    def __init__(self, harness: Any) -> None:
        self._harness = harness

    def __getattr__(self, name: str) -> Any:
        return getattr(self._harness, name)

    def run(self, module: Any, case: Any, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        if module is EAGER:
            outputs.update(self._harness.eager(case, inputs))
        else:
            self._harness.run(module, case, inputs, outputs)


EAGER = object()  # the "module" EagerHarness.run computes eagerly


def eager_job(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Child entry point: eager once per listed (case, seed) (``args["runs"]``), or, with
    ``args["timing"]`` (GPU), eager timed against the warmed baseline."""
    from geak_evaluator_triton.child_jobs import (
        error_frame,
        import_file,
        load_harness,
        load_task,
        make_inputs,
        prefetch,
        resolve_reference,
        setup_runtime,
        synchronize,
    )

    setup_runtime()
    task = load_task(args["task"])
    try:
        harness = load_harness(task)
        cases = {c.name: c for c in harness.cases(args["case_set"])}
        if task.eager == "reference":
            side, module = harness, import_file(EAGER_MODULE, resolve_reference(task, harness))
        else:
            side, module = EagerHarness(harness), EAGER
    except Exception as exc:
        channel.send(error_frame("setup_error", exc))
        return {"ok": False}
    timing = args.get("timing")
    seed_a = timing["reference_seed"] if timing else 0
    runs = [[n, seed_a] for n in timing["cases"]] if timing else args["runs"]
    for name, seed in runs:
        prefetch(harness, cases[name], seed)  # host-side work before the device is asked for
    if timing and timing.get("gate"):  # eager's first calls and the warm-up use the device: wait like a run
        channel.send({"kind": "start", "stage": "warm-up", "case": "*", "seed": seed_a})
        if channel.receive().get("abort"):
            return {"ok": False}
    runnable = []
    for name, seed in runs:
        try:  # also eager's first call (its warm-up) when it is to be timed
            inputs = make_inputs(harness, task, cases[name], seed, "stage1")
            outputs = side.allocate(cases[name], inputs)
            side.run(module, cases[name], inputs, outputs)
            synchronize()
        except NotImplementedError:
            channel.send({"kind": "error", "case": name, "seed": seed, "not_implemented": True})
            continue
        except Exception as exc:
            channel.send(error_frame("error", exc, case=name, seed=seed))
            continue
        runnable.append(cases[name])
        if not timing:
            channel.send({"kind": "run", "case": name, "seed": seed, "outputs": outputs})
        del inputs, outputs
    if not timing:
        return {"ok": True}
    if not runnable:
        channel.send({"kind": "warmed"})  # the device is free again
        return {"ok": True}
    return {"ok": _time(channel, task, harness, side, module, runnable, timing)}


def _time(channel: Any, task: Any, harness: Any, side: Any, module: Any, cases: list[Any],
          timing: dict[str, Any]) -> bool:
    """Warm the baseline (the device held shared since eager's first calls), then, once
    the judge holds the device exclusively, time eager against it with the judge's loop
    (``timing_loop.time_case``), both sides in this trusted process."""
    import torch

    from geak_evaluator_triton.child_jobs import (
        REFERENCE_MODULE,
        error_frame,
        import_file,
        resolve_reference,
    )
    from geak_evaluator_triton.timed_calls import (
        LocalSide,
        TimedSide,
        await_timing,
        cycles_per_us,
        warm_module,
    )
    from geak_evaluator_triton.timing_loop import targets, time_case

    seed_a = timing["reference_seed"]
    try:
        baseline = import_file(REFERENCE_MODULE, task.timing_baseline or resolve_reference(task, harness))
        estimates = warm_module(harness, task, baseline, cases, seed_a)
    except Exception as exc:
        channel.send(error_frame("setup_error", exc, where="baseline warm-up"))
        return False
    channel.send({"kind": "warmed"})
    channel.send({"kind": "checked"})  # nothing to check: waiting for the device alone
    seed = await_timing(channel, harness, cases)
    if seed is None:
        return True
    loop = timing["options"]
    flush = (torch.empty(int(loop["flush_bytes"]) // 4, dtype=torch.int32, device="cuda")
             if loop.get("flush_bytes") else None)
    cycles = cycles_per_us()
    by_name = {c.name: c for c in cases}
    base = LocalSide(TimedSide(harness, baseline, flush, cycles), task, by_name)
    eager = LocalSide(TimedSide(side, module, flush, cycles, keep_last=True), task, by_name)
    aims = targets(estimates, list(by_name), float(loop.get("target_ci") or 0.0), str(loop.get("weighting", "sum")))
    from geak_evaluator_triton.timed_calls import warmup_for

    outputs = []
    for index, case in enumerate(cases):
        try:
            # both on the timing seed: the same inputs (timing_session.run_session says why)
            record = time_case(base, eager, case.name, seed, seed, loop, aims[case.name],
                               warmup_for(float(loop["warmup_ms"]), index))
        except Exception as exc:
            channel.send(error_frame("error", exc, stage="timing", case=case.name, seed=seed))
            continue
        record.pop("tallies")
        ended = record.pop("ended")
        channel.send({"kind": "timing", "case": case.name, "seed": seed, **record})
        outputs.append((case.name, ended["other"].get("outputs")))
    channel.send({"kind": "timed"})  # the device is free again; the outputs travel after
    for name, value in outputs:
        channel.send({"kind": "timing_outputs", "case": name, "seed": seed, "outputs": value})
    return True


__all__ = ["EagerCase", "EagerStore", "EagerTimes", "apply_eager", "eager_is_baseline", "eager_job"]
