"""The ``triton`` evaluator: the judge's side of every evaluation.

Nothing here runs candidate code. Per candidate the judge

1. checks the source statically (syntax, a kernel exists, no forbidden constructs);
2. obtains the reference outputs for the task from a *reference* child, once
   per task, device and seeds (``reference_store``);
3. runs a *candidate* child that imports the code under guards and only after
   the import learns which seeds and cases to run; it streams outputs back and
   the judge compares each run as it arrives (``candidate_run``, ``run_compare``;
   harnesses that override ``compare`` have their hook run in a trusted child);
4. on a GPU, times a correct candidate in the same child against the baseline
   in the task's trusted timer child, block by block, once it holds the device
   exclusively, then checks the timed calls (``timed_calls`` in the children,
   ``timing_loop`` and ``timing_session`` here, ``baseline_timer`` for the timer).

Several candidates are checked on one GPU at once (``candidates_per_gpu``
slots per device, ``max_parallel`` in all); timing never shares the device
(``devices.DeviceGate``). ``evaluate_many`` yields results as they finish.

``profile`` runs a correct candidate under a profiling tool for the agent's and ``geak-core
profile``'s diagnosis (``profile_run``); it holds the device alone, as timing does, and
changes no verdict.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import queue
import secrets
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from geak_core.api.components import EvalJob, EvaluatorBase, HardwareProfile, ProfilerBase
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import ProfileRecord
from geak_core.api.tasks import Task
from geak_core.engine.hardware import resolve_profile
from geak_core.kit.confinement import landlock_abi
from geak_core.kit.sandbox import (
    SandboxResult,
    accept_new_jobs,
    namespaces_available,
    stop_running_jobs,
)

from geak_evaluator_triton.baseline_timer import TimerPool
from geak_evaluator_triton.candidate_run import CandidateFrames, Gating, correctness_plan
from geak_evaluator_triton.child_jobs import device_facts, is_interpreter
from geak_evaluator_triton.child_pool import Children, task_payload
from geak_evaluator_triton.devices import Runtime, Slot, gpu_slots, gpu_visible, visible_devices
from geak_evaluator_triton.eager import EagerStore
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.performance import INTERPRETER_NOTE, shape_stub
from geak_evaluator_triton.profile_run import run_profile, why_not
from geak_evaluator_triton.reference_run import ReferenceRun, candidate_budget
from geak_evaluator_triton.reference_store import PendingReference, ReferenceStore
from geak_evaluator_triton.run_compare import (
    JudgeError,
    ReferenceFailed,
    compare_outputs,
    overrides_for,
    tail,
)
from geak_evaluator_triton.static_checks import check_source
from geak_evaluator_triton.timing_session import apply_timing, loop_options, timing_request
from geak_evaluator_triton.verdict import Verdict, name_published_protocol, trim_traceback

__all__ = ["JudgeError", "TritonEvaluator"]


def cast_like(oracle: Any, outputs: Any) -> Any:
    """The oracle's tensors in the dtype of the reference's outputs they stand for (oracles
    compute in higher precision; the tolerances are those of the outputs' dtype)."""
    import torch

    if isinstance(oracle, torch.Tensor) and isinstance(outputs, torch.Tensor):
        if oracle.dtype != outputs.dtype and oracle.dtype.is_floating_point and outputs.dtype.is_floating_point:
            return oracle.to(outputs.dtype)
        return oracle
    if isinstance(oracle, dict) and isinstance(outputs, dict):
        return {k: cast_like(v, outputs[k]) if k in outputs else v for k, v in oracle.items()}
    if isinstance(oracle, (list, tuple)) and isinstance(outputs, (list, tuple)) and len(oracle) == len(outputs):
        return type(oracle)(cast_like(o, r) for o, r in zip(oracle, outputs, strict=True))
    return oracle


def apply_verdict(result: EvalResult, verdict: Verdict) -> None:
    """The correctness verdict of a candidate's child into its ``EvalResult``: whether it ran,
    whether it is correct, its flags, and its first failure (stage, reason, error, mismatches)."""
    first = verdict.first
    result.call_ok = verdict.ran
    result.correct = verdict.ran and first is None
    result.flags.extend(f for f in verdict.flags if f not in result.flags)
    if first is not None:
        result.failed_stage = first.stage
        result.reason = verdict.reason()
        result.error = trim_traceback(first.error)
        result.mismatches = first.mismatches


class _ReferenceFailedBeside(Exception):
    """The reference failed while a candidate's child ran beside it (``ran``: its frames and
    how it ended, or None if none ran). The reference's error is the one kept for the task
    and raised for later verdicts: it is wrapped here, never changed."""

    def __init__(self, error: ReferenceFailed, ran: tuple[CandidateFrames, SandboxResult] | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.ran = ran


def next_job(waiting: list[EvalJob], finished: set[str], running: dict[str, int],
             ready: Callable[[EvalJob], bool] | None = None, look_ahead: int = 0) -> int:
    """The index in ``waiting`` of the job to start next: the first whose task has a finished
    job (its reference is known) or none in flight; when every waiting job's task has a
    first job still in flight, the first job (a slot would idle otherwise). With ``ready``
    (is this job's reference decided already, say by a prefetch), among the first
    ``look_ahead`` jobs (0: all) one that is ready goes before one whose task is new: a
    job waiting for a slow reference would hold its slot meanwhile."""
    free = [index for index, job in enumerate(waiting)
            if job.task.key in finished or not running.get(job.task.key)]
    if not free:
        return 0
    if ready is not None:
        for index in free[:look_ahead or None]:
            job = waiting[index]
            if job.task.key in finished or ready(job):
                return index
    return free[0]


def judge_jobs(evaluate: Any, jobs: Iterable[EvalJob], parallel: int, may_start: Any = None,
               ready: Callable[[EvalJob], bool] | None = None) -> Iterator[tuple[EvalJob, EvalResult]]:
    """``evaluate(task, candidate)`` over ``jobs``, ``parallel`` at once, yielding each
    (job, result) as it finishes; jobs start in the order :func:`next_job` picks (``ready``:
    see there). With ``may_start`` (no arguments), no job starts once it answers False: the
    jobs in flight finish and are yielded, the rest are not judged.

    A job starts the moment another finishes, from the finishing job's thread: the caller's
    work on a yielded verdict (printing it, rewriting a journal) never holds a slot idle.
    ``TritonEvaluator.evaluate_many`` and ``bench/tritonbench_published.py`` (its
    ``--limit-s``) schedule through this."""
    waiting = list(jobs)
    if not waiting:
        return
    accept_new_jobs()  # a batch after a Ctrl-C that was caught: children start again
    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="geak-judge") as pool:
        scheduler = _JobScheduler(pool, evaluate, waiting, max(1, parallel), may_start, ready)
        try:
            yield from scheduler.results()
        except KeyboardInterrupt:
            # Ctrl-C reaches this process, not the children (process groups of their own): kill
            # them, or leaving the pool would wait for every verdict in flight to reach its budget.
            scheduler.close()
            stop_running_jobs(refuse_new=True)  # the verdicts in flight start no other child
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            scheduler.close()  # a caller that stops early: nothing more starts


class _JobScheduler:
    """``judge_jobs``'s bookkeeping: which jobs wait, which tasks have a verdict, how many run."""

    def __init__(self, pool: ThreadPoolExecutor, evaluate: Any, waiting: list[EvalJob], parallel: int,
                 may_start: Any, ready: Callable[[EvalJob], bool] | None) -> None:
        self._pool, self._evaluate, self._waiting = pool, evaluate, waiting
        self._parallel, self._may_start, self._ready = parallel, may_start, ready
        self._lock = threading.RLock()  # a job may finish inside ``add_done_callback``
        self._finished: set[str] = set()
        self._running: dict[str, int] = {}
        self._in_flight = 0
        self._closed = False
        self._error: Exception | None = None  # raised by the scheduling itself in a job's thread
        self._done: queue.Queue[tuple[EvalJob, Any]] = queue.Queue()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def results(self) -> Iterator[tuple[EvalJob, EvalResult]]:
        with self._lock:
            self._fill()
        while True:
            with self._lock:
                if self._error is not None:
                    raise self._error
                if not self._in_flight and self._done.empty():
                    return  # all judged, or the rest may not start
            try:
                job, future = self._done.get(timeout=0.5)  # a timeout so Ctrl-C is seen
            except queue.Empty:
                continue
            yield job, future.result()

    def _fill(self) -> None:
        while (self._waiting and not self._closed and self._in_flight < self._parallel
               and (self._may_start is None or self._may_start())):
            job = self._waiting.pop(next_job(self._waiting, self._finished, self._running, self._ready,
                                             4 * self._parallel))
            self._running[job.task.key] = self._running.get(job.task.key, 0) + 1
            self._in_flight += 1
            future = self._pool.submit(self._evaluate, job.task, job.candidate)
            future.add_done_callback(lambda done, job=job: self._finish(job, done))

    def _finish(self, job: EvalJob, future: Any) -> None:
        with self._lock:
            self._running[job.task.key] -= 1
            self._finished.add(job.task.key)
            self._done.put((job, future))  # before the count drops: ``results`` sees one or the other
            self._in_flight -= 1
            try:
                self._fill()
            except Exception as exc:  # seen by ``results`` in the caller's thread
                self._closed = True
                if self._error is None:
                    self._error = exc


class TritonEvaluator(EvaluatorBase):
    """Judges candidates in sandboxed children; never raises out of ``evaluate``."""

    def __init__(self, options: TritonEvaluatorOptions | None = None) -> None:
        self.options = options or TritonEvaluatorOptions()
        problems = self.options.validate()
        if problems:
            raise ValueError("invalid triton evaluator options: " + "; ".join(problems))
        self._lock = threading.Lock()
        self._in_flight = 0  # verdicts being judged now (prepare_timing = auto)
        self._batches = 0  # evaluate_many calls under way (lazy_reference = auto)
        self._judging: dict[object, tuple[str, str, float]] = {}  # their task, candidate, start
        self._runtime: Runtime | None = None
        self._runtime_error: str | None = None
        self._slots: queue.Queue[Slot] = queue.Queue()
        self._hardware: HardwareProfile | None = None
        self._hardware_resolved = False
        self.children = Children(self.options)
        draws: list[int] = []
        while len(draws) < self.options.secret_seeds + 1:
            seed = secrets.randbelow(2**31 - 1)
            if seed not in draws and seed not in (self.options.seeds or ()):
                draws.append(seed)
        # The last draw is the timing seed: no correctness run ever uses it.
        self.references = ReferenceStore(self.children, draws[:-1], draws[-1])
        self.eager = EagerStore(self.children, self.references)  # speedups against PyTorch eager
        self.timers = TimerPool(self.children)  # the baselines' trusted timers

    # -- configuration ------------------------------------------------------

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        """The run's hardware profile (peaks for roofline figures), as the agent resolved its
        recipe's ``[hardware] profile``. The option ``hardware``, when it names a profile,
        overrides it; given none, the judge detects its own device (``resolve_hardware``)."""
        if self.options.hardware not in ("", "auto"):
            return
        self._hardware = profile
        self._hardware_resolved = profile is not None

    @property
    def hardware(self) -> HardwareProfile | None:
        return self._hardware

    @property
    def max_parallel(self) -> int:
        """How many candidates this judge works on at once (its slots)."""
        try:
            return len(self.runtime().slots)
        except JudgeError:
            return 1

    def settle(self, timeout_s: float = 120.0) -> float:
        """Wait until the judge is idle-ready: its runtime resolved and every slot's spare
        child up (each verdict uses one and starts its replacement). Seconds waited; a
        judge whose spares do not come up in ``timeout_s`` still judges (it starts children
        as needed). For benchmarks that compare a settled judge's verdicts."""
        began = time.monotonic()
        try:
            self.runtime()
        except JudgeError:
            return 0.0
        self.children.settle(timeout_s)
        return time.monotonic() - began

    def unmet_requirements(self, task: Task) -> list[str]:
        """Why ``task`` as a whole cannot run on this judge's device (empty: it can)."""
        from geak_core.api.tasks import DeviceInfo, triton_version, unmet_requirement

        try:
            runtime = self.runtime()
        except JudgeError as exc:
            return [str(exc)]
        if runtime.mode == "interpreter":
            device = DeviceInfo("interpreter", triton=triton_version())
        else:
            info = runtime.probe["devices"][0]
            kind = "hip" if runtime.vendor == "amd" else "cuda"
            device = DeviceInfo(kind, info["name"], tuple(info["capability"]), info.get("arch", ""),
                                triton_version())
        return [why for r in task.requires if (why := unmet_requirement(r, device))]

    def seeds_for(self, task: Task) -> list[int]:
        return self.references.seeds_for(task)

    def runtime(self) -> Runtime:
        """Resolve mode, device and worker slots (once)."""
        with self._lock:
            if self._runtime is not None:
                return self._runtime
            if self._runtime_error is not None:
                raise JudgeError(self._runtime_error)
            try:
                self._runtime = self._resolve_runtime()
                self._runtime.isolate = self._resolve_isolation()
            except JudgeError as exc:
                self._runtime_error = str(exc)
                raise
            self.children.runtime = self._runtime
            for slot in self._runtime.slots:
                self._slots.put(slot)
            self.children.start_spares()
            return self._runtime

    def _resolve_runtime(self) -> Runtime:
        mode = self.options.mode
        if mode == "auto":
            mode = "gpu" if gpu_visible() else "interpreter"
        case_set = self.options.case_set
        if case_set == "auto":
            case_set = "full" if mode == "gpu" else "small"
        if mode == "interpreter":
            from importlib.metadata import version

            # This process compares outputs with torch and encodes frames with it: imported
            # here, before any child or spare starts (imported in a thread beside the spares'
            # start, a spare's first frame met a partly initialised torch).
            importlib.import_module("torch")
            workers = self.options.workers or min(4, os.cpu_count() or 1)
            env = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            slots = [Slot(i, dict(env), f"cpu worker {i}") for i in range(workers)]
            probe = {"torch": version("torch"), "triton": version("triton")}
            return Runtime("interpreter", case_set, "cpu (Triton interpreter)", None, slots, probe)
        probe = self._probe({"TRITON_INTERPRET": None})
        if not probe.get("gpu") or not probe.get("devices"):
            raise JudgeError("evaluator mode 'gpu' was requested but no GPU is visible to torch")
        vendor = "amd" if probe.get("hip") else "nvidia"
        visible = visible_devices(vendor, len(probe["devices"]))
        if self.options.workers:
            visible = visible[: self.options.workers]
        slots = gpu_slots(vendor, visible, self.options.candidates_per_gpu, self.options.runs_per_gpu)
        return Runtime("gpu", case_set, probe["devices"][0]["name"], vendor, slots, probe)

    def _resolve_isolation(self) -> bool:
        if self.options.confinement != "none" and landlock_abi() < 1:
            raise JudgeError("this kernel offers no Landlock (Linux 5.13 or later with Landlock enabled), so "
                             "candidates' children cannot be confined: the judge refuses to run untrusted "
                             "code. Set the evaluator option confinement = \"none\" to judge without it "
                             "(a candidate can then write anywhere your user can)")
        choice = self.options.isolation
        if choice == "none":
            return False
        available = namespaces_available()
        if choice == "namespaces" and not available:
            raise JudgeError("isolation 'namespaces' was requested but this kernel refuses this user new "
                             "user, PID and network namespaces (unprivileged user namespaces disabled?)")
        return available

    def _probe(self, env: dict[str, str | None]) -> dict[str, Any]:
        """What the devices are. Asked here, of the driver (properties only, no CUDA
        context), unless this process runs Triton's interpreter; in a child otherwise, or
        when that finds no GPU. A child costs a Python start and torch's import, seconds
        that every fresh judge's first verdict waited for before any spare was started."""
        if not is_interpreter():
            try:
                facts = device_facts(gpu=True)
            except Exception:  # a broken driver install: the child reports it
                facts = {}
            if facts.get("gpu") and facts.get("devices"):
                return facts
        result = self.children.run("probe", {}, env, timeout=120.0, cache="reference")
        if not result.completed:
            raise JudgeError("could not probe the device: " + result.describe_exit() + tail(result.stderr))
        return result.returned

    def resolve_hardware(self) -> HardwareProfile | None:
        """The profile named in the options, else the one set (``set_hardware``), else the one
        matched to this judge's device: one matcher with the agent's (``geak_core.engine.hardware``)."""
        if self._hardware_resolved:
            return self._hardware
        self._hardware_resolved = True
        runtime = self.runtime()
        name = self.options.hardware or "auto"
        from geak_core.engine.plugins import get_plugin_manager

        found = runtime.probe["devices"][0] if runtime.mode == "gpu" else None
        device = (found["name"], found.get("arch", "")) if found else None
        try:
            self._hardware = resolve_profile(name, get_plugin_manager(), device)
        except Exception as exc:
            raise JudgeError(f"hardware profile {name!r}: {exc}") from exc
        return self._hardware

    # -- references -------------------------------------------------------------

    def reference(self, task: Task, slot: Slot | None = None) -> ReferenceRun:
        """The reference outputs of ``task`` (cached); raises JudgeError if the reference fails."""
        runtime = self.runtime()
        if slot is not None:
            return self.references.get(task, runtime, slot)
        slot = self._slots.get()
        try:
            return self.references.get(task, runtime, slot)
        finally:
            self._slots.put(slot)

    def check_reference(self, task: Task) -> dict[str, Any]:
        """Reference vs the harness oracle, per run, and the task's eager equivalent vs the
        reference (``eager_checked`` cases): what a suite's own tests assert."""
        runtime = self.runtime()
        slot = self._slots.get()
        try:
            run = self.references.run(task, runtime, slot, self.seeds_for(task), oracle=True)
            eager_checked, eager_problems = self.eager.check(task, runtime, slot, run)
        finally:
            self._slots.put(slot)
        report: dict[str, Any] = {"task": task.key, "skipped": run.skipped, "problems": list(eager_problems),
                                  "checked": 0, "eager_checked": eager_checked}
        cases = {c.name: c for c in run.cases}
        for index, oracle in run.oracle.items():
            if isinstance(oracle, dict) and "$oracle_error" in oracle:
                report["problems"].append(f"{index}: the oracle raised:\n{oracle['$oracle_error']}")
                continue
            stage, name, seed = index
            output = run.outputs[index]
            diffs = compare_outputs(cast_like(oracle, output), output, overrides_for(task, cases[name]), None)
            report["checked"] += 1
            for diff in diffs:
                report["problems"].append(f"{stage} case {name!r} seed {seed}: {diff['message']}")
        return report

    # -- evaluation -----------------------------------------------------------

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        started = time.monotonic()
        result = EvalResult(task_id=task.id, candidate_id=candidate.id,
                            speedup_method=self.options.speedup_method)
        token = object()
        with self._lock:
            self._in_flight += 1
            self._judging[token] = (task.id, candidate.id, started)
        try:
            mark = time.monotonic()
            runtime = self.runtime()
            resolving = time.monotonic() - mark
            if resolving >= 0.001:  # this judge's first call: device and slots
                result.phases["runtime"] = round(resolving, 3)
            result.mode = runtime.mode
            result.device = runtime.device_name
            mark = time.monotonic()
            finding = check_source(candidate.code, forbid_constructs=self.options.static_checks)
            result.phases["static"] = round(time.monotonic() - mark, 3)
            if finding is not None:
                result.failed_stage = finding.stage
                result.reason = finding.reason
                self._no_performance(result, runtime, "the candidate was rejected before running")
                return result
            mark = time.monotonic()
            slot = self._slots.get()
            result.phases["queue"] = round(time.monotonic() - mark, 3)
            try:
                self._judge(task, candidate, runtime, slot, result)
            finally:
                self._slots.put(slot)
        except JudgeError as exc:
            result.flags.append("judge_error")
            if isinstance(exc, ReferenceFailed):
                result.flags.append("reference_failed")
            result.reason = f"judge error: {str(exc).splitlines()[0]}"
            result.error = trim_traceback(str(exc))
        except Exception as exc:  # never let the judge's own bugs escape
            result.flags.append("judge_error")
            result.reason = f"internal judge error: {type(exc).__name__}: {exc}"
            result.error = trim_traceback(traceback.format_exc())
        finally:
            with self._lock:
                self._in_flight -= 1
                self._judging.pop(token, None)
            result.wall_s = time.monotonic() - started
        name_published_protocol(task.extra, result)
        return result

    def judging(self) -> list[tuple[str, str, float]]:
        """The verdicts being judged now: (task id, candidate id, seconds so far), longest
        first (``geak-core eval``'s progress line names the longest)."""
        now = time.monotonic()
        with self._lock:
            items = list(self._judging.values())
        return sorted(((t, c, now - since) for t, c, since in items), key=lambda item: -item[2])

    def evaluate_many(self, jobs: Iterable[EvalJob],
                      may_start: Callable[[], bool] | None = None) -> Iterator[tuple[EvalJob, EvalResult]]:
        """Judge ``jobs`` in parallel (``max_parallel`` at once), yielding as each finishes
        (``may_start``: see :func:`judge_jobs`).

        Jobs start in the order given, except that a task none of whose jobs has finished
        (its reference may still be running, or stuck) has one job at a time in flight while
        other tasks' jobs wait: a slow reference holds up its own task's candidates, not
        every slot (``next_job``). On a GPU the jobs are first put in order of their task's
        expected cost, the costliest first (``_costliest_first``), the tasks' references are
        computed ahead of their candidates (``reference_prefetch`` at once), and a job whose
        reference is decided goes before one whose reference still runs."""
        jobs = list(jobs)
        stop = threading.Event()
        with self._lock:
            self._batches += 1
        prefetching = self._prefetch_count() > 0 and len({job.task.key for job in jobs}) > 1
        if prefetching:
            costs = self.expected_costs(job.task for job in jobs)
            jobs = self._costliest_first(jobs, costs)
            threading.Thread(target=self.prefetch, args=([job.task for job in jobs], stop, costs),
                             name="geak-prefetch", daemon=True).start()
        try:
            yield from judge_jobs(self.evaluate, jobs, self.max_parallel, may_start,
                                  ready=self._reference_known if prefetching else None)
        finally:
            stop.set()
            with self._lock:
                self._batches -= 1

    def expected_costs(self, tasks: Iterable[Task]) -> dict[str, float]:
        """Each task's expected cost in seconds (``ReferenceStore.expected_cost``, once a task,
        by ``Task.key``; empty where the device cannot be resolved), for ordering only: this
        judge's own prefetch, and the local executor's judge processes before they share a
        batch out, start the costliest tasks first."""
        try:
            runtime = self.runtime()
        except JudgeError:
            return {}
        costs: dict[str, float] = {}
        for task in tasks:
            if task.key not in costs:
                costs[task.key] = self.references.expected_cost(task, runtime)
        return costs

    @staticmethod
    def _costliest_first(jobs: list[EvalJob], costs: dict[str, float]) -> list[EvalJob]:
        """``jobs`` by their task's expected cost (``costs``), the costliest first, the given
        order kept among equals: a job that takes minutes (a reference compiling for long, or
        one whose timed runs and timer take a minute before its candidate can be timed) starts
        at the beginning rather than ending a batch alone on one GPU while the others idle."""
        return sorted(jobs, key=lambda job: -costs.get(job.task.key, 0.0))

    def _prefetch_count(self) -> int:
        choice = self.options.reference_prefetch
        try:
            runtime = self.runtime()
        except JudgeError:
            return 0
        if choice >= 0:
            return choice
        # A cold start waits on references compiling on the CPU (every candidate needs its
        # own): as many at once as there are slots, up to half the host's cores.
        cores = max(2, os.cpu_count() or 2)
        return max(1, min(len(runtime.slots), cores // 2)) if runtime.mode == "gpu" else 0

    def _reference_known(self, job: EvalJob) -> bool:
        """The job's reference is decided, or recorded well enough that its candidate need
        not wait for it (a case table, ``lazy_reference``)."""
        try:
            runtime = self.runtime()
            if self.references.known(job.task, runtime):
                return True
            return (self.options.lazy_reference != "off"
                    and self.references.has_table(job.task, runtime))
        except Exception:
            return False

    def prefetch(self, tasks: Iterable[Task], stop: threading.Event | None = None,
                 costs: dict[str, float] | None = None) -> int:
        """Compute the references of ``tasks`` (each once) ahead of their candidates,
        ``reference_prefetch`` at once, spread over the devices, the costliest first (as
        ``ReferenceStore.expected_cost`` guesses: a reference that compiles for minutes, or
        never finishes, starts at once instead of at its candidate's turn); returns how many
        it started. A candidate of a task whose reference is still being computed shares
        that run. Each reference holds the device as it always does (shared, per run) and
        keeps to its budget; ``stop`` ends the walk (the runs started go on); ``costs``: the
        tasks' expected costs when the caller has them (``expected_costs``)."""
        runtime = self.runtime()
        limit = max(1, self._prefetch_count())
        timing = self.options.prepare_timing == "up_front"
        started: list[PendingReference] = []
        unique: dict[str, Task] = {}
        for task in tasks:
            unique.setdefault(task.key, task)
        if costs is None:
            costs = self.expected_costs(unique.values())
        order = sorted(unique.values(), key=lambda t: -costs.get(t.key, 0.0))  # stable: job order on ties
        count = 0
        for task in order:
            while not (stop is not None and stop.is_set()):
                started = [p for p in started if not p.done]
                if len(started) < limit:
                    break
                started[0].wait_finished(0.5)
            if stop is not None and stop.is_set():
                break
            count += 1
            slot = runtime.slots[count % len(runtime.slots)]
            # A batch: a reference with a recorded case table is left for its candidates to
            # start if they need it (lazy_reference), not computed ahead.
            pending = self.references.begin(task, runtime, slot, timing=timing,
                                            lazy=self.options.lazy_reference != "off")
            if isinstance(pending, PendingReference) and not pending.done:
                started.append(pending)
        return count

    # -- profiling --------------------------------------------------------------

    def profile(self, task: Task, candidate: Candidate, profiler: ProfilerBase, seconds: float, *,
                case: str = "", calls: int = 1) -> ProfileRecord:
        """Run a correct ``candidate`` under ``profiler`` on one case of ``task`` (``case``, else
        its largest timed case), ``calls`` calls profiled, in a child of its own within
        ``seconds`` (``profile_run``): one slot, the device held alone while it is profiled.
        Never changes a verdict, a reference or a timing; never raises for a failure (the
        record's ``error`` says it)."""
        started = time.monotonic()
        record = ProfileRecord(profiler.profiler_name, candidate.id, case=case, calls=calls)
        try:
            problem = why_not(profiler)
            if not problem:
                finding = check_source(candidate.code, forbid_constructs=self.options.static_checks)
                problem = f"rejected before running: {finding.reason}" if finding is not None else ""
            if problem:
                return dataclasses.replace(record, error=problem)
            runtime = self.runtime()
            slot = self._slots.get()
            try:
                record = run_profile(self.children, runtime, slot, task, candidate, profiler, seconds, case, calls)
            finally:
                self._slots.put(slot)
        except JudgeError as exc:
            record = dataclasses.replace(record, error=f"judge error: {str(exc).splitlines()[0]}")
        except Exception as exc:  # never let the judge's own bugs escape
            record = dataclasses.replace(record, error=f"internal judge error: {type(exc).__name__}: {exc}")
        return dataclasses.replace(record, seconds=time.monotonic() - started)

    def close(self) -> None:
        self.references.clear()
        self.timers.close()
        self.children.close()
        for slot in self._runtime.slots if self._runtime is not None else []:
            if slot.gate.lock_file and os.path.exists(slot.gate.lock_file):
                try:
                    os.remove(slot.gate.lock_file)
                except OSError:
                    pass

    def run_candidate(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot, ref: ReferenceRun,
                      profile: HardwareProfile | None = None, timing: bool = True,
                      live: PendingReference | None = None,
                      phases: dict[str, float] | None = None) -> tuple[CandidateFrames, SandboxResult]:
        """One candidate child: its plan, its frames as read, how it ended. ``live``: the
        reference still runs, ``ref`` is its provisional run (``_overlapped``). A correct
        candidate is timed in the same child (``timing_session``, on a GPU): the reference's timed
        outputs and the baseline's timer are made ready once it is found correct, if they
        are not already (the reference's timed runs add ``reference.timing`` to ``phases``)."""
        timed = ref.timed if runtime.mode == "gpu" and timing else []
        sharing = runtime.shares_device(slot)
        plan = correctness_plan(ref, self.options, gate=runtime.mode == "gpu" and sharing)
        frames = CandidateFrames(task, ref, plan, self.options, Gating(slot, shared_runs=sharing),
                                 timing_wanted=bool(timed), run_child=self.children.for_task(task, slot),
                                 live=live, loop=loop_options(self.options, profile),
                                 prepare_timing=lambda final: self._prepare_timing(task, runtime, slot, final, phases),
                                 timing_seed=self.references.planned_timing_seed)
        args: dict[str, Any] = {"task": task_payload(task), "code": candidate.code, "case_set": runtime.case_set}
        if timed:
            args["timing"] = timing_request(ref, self.options, profile)
        sandbox = self.children.run("candidate", args, slot.env, timeout=self.options.timeout_s,
                                    cache=self.children.candidate_cache(candidate.code), on_message=frames,
                                    slot=slot)
        return frames, sandbox

    def _start_timer(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun, use: bool = False) -> Any:
        """The task's baseline timer on ``slot``'s device, started now if there is none; with
        ``use``, in use by the caller until it calls ``release`` (else only warming up)."""
        # Its warm-up gets what the reference's timed runs get: scaled from the reference's time.
        budget, _ = candidate_budget(ref, self.options.reference_timeout_s, self.options.budget_scale,
                                     self.options.budget_floor_s)
        return self.timers.start(self.references.key(task, runtime), task, runtime, slot, ref, use=use,
                                 warm_budget_s=budget, timing_seed=self.references.planned_timing_seed(ref))

    def _prepare_timing(self, task: Task, runtime: Runtime, slot: Slot, ref: ReferenceRun,
                        phases: dict[str, float] | None = None) -> tuple[Any, str]:
        """For a correct candidate about to be timed: the reference's outputs on the timing seed
        and the baseline's timer, warm. (timer, "") or (None, why it cannot be timed). The
        seconds this took the first time are recorded with the reference's (``cost_s``)."""
        began, first = time.monotonic(), not ref.timing_ready
        producer, warming = None, None
        if first and ref.timed:
            # The baseline's timer starts (a process, the task, its timed inputs drawn) beside
            # the reference's timed runs rather than after them; the same timer is taken below
            # unless those runs find a case they cannot time.
            in_timer = self.options.reference_timed_outputs == "timer" and not task.timing_baseline
            # In use while it runs the reference's timed outputs: the pool closes no timer in use.
            warming = self._start_timer(task, runtime, slot, ref, use=in_timer)
            if in_timer:
                # The timer's baseline is the reference: once warm, it runs the timed cases on
                # the timing seed itself, and no second reference process starts, imports,
                # compiles and autotunes them again (a reference child, if it cannot).
                def producer(seed: int, cases: list[str], budget_s: float) -> Any:
                    return self._timer_outputs(warming, seed, cases, budget_s)
        try:
            self.references.ensure_timing(task, runtime, slot, ref, phases, producer)
        except JudgeError as exc:
            return None, f"the reference's timed runs failed: {str(exc).splitlines()[0]}"
        finally:
            if producer is not None:
                warming.release()
        if not ref.timed:
            return None, "the reference could not be timed on any case"
        timer = self._start_timer(task, runtime, slot, ref, use=True)
        if task.eager:
            self.eager.prefetch(task, runtime, slot, ref, self.resolve_hardware())
        problem = timer.wait_ready(self.options.reference_timeout_s)
        if problem:
            timer.release()
            return None, problem
        if first:
            self.references.times.store_timing(self.references.key(task, runtime), time.monotonic() - began)
        return timer, ""

    def _timer_outputs(self, timer: Any, seed: int, cases: list[str], budget_s: float) -> Any:
        """The reference's timed outputs from ``timer`` (warm within its own budget), or None
        (the caller then runs a reference child for them)."""
        began = time.monotonic()
        if timer.wait_ready(budget_s):
            return None
        outputs, untimed, problem = timer.reference_outputs(seed, cases, max(1.0, budget_s - (time.monotonic() - began)))
        return None if problem else (outputs, untimed)

    def _run_candidate(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot,
                       ref: ReferenceRun) -> SandboxResult:
        return self.run_candidate(task, candidate, runtime, slot, ref)[1]

    def _lazy(self) -> bool:
        """A reference with a recorded case table waits for its candidate to need it
        (``lazy_reference``; "auto": in a batch, or while several verdicts are in flight)."""
        choice = self.options.lazy_reference
        if choice != "auto":
            return choice == "on"
        with self._lock:
            return self._in_flight > 1 or self._batches > 0

    def _overlaps(self, runtime: Runtime) -> bool:
        choice = self.options.overlap_reference
        return choice == "on" or (choice == "auto" and runtime.mode == "gpu")

    def _overlapped(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot, result: EvalResult,
                    pending: PendingReference,
                    ) -> tuple[ReferenceRun, tuple[CandidateFrames, SandboxResult, float] | None]:
        """The task's reference, computed while this candidate's child already runs.

        The child starts once the reference child has sent its case table (the cases, which
        are skipped here, which have a stage 2): that and the judge's seeds make the plan.
        Each run's comparison waits for its reference output, and timing for the whole
        reference. Returns the finished run and the child's (frames, sandbox, own seconds),
        or None in its place when no child ran or the finished reference changed the plan
        (a reference redone on the protocol's seed alone, a timed case the reference could
        not time): the candidate is then judged again as if the reference had come first.
        A reference that fails makes a judge error, unless the candidate failed on its own
        meanwhile without needing any output the reference did not give
        (``_ReferenceFailedBeside``: ``_judge`` decides it).
        """
        began = time.monotonic()
        provisional = pending.wait_table()
        early = None
        ran = None
        own = 0.0  # the child's own time, its waits for the reference excluded
        if provisional is not None and provisional.runnable:
            gpu = runtime.mode == "gpu"
            profile = self.resolve_hardware() if gpu and provisional.timed else None
            if gpu and provisional.timing_ready and provisional.timed:
                # The baseline's timer warms up meanwhile; eager's child starts now too (its
                # outputs are checked once the reference is done).
                self._start_timer(task, runtime, slot, provisional)
                if task.eager:
                    self.eager.prefetch(task, runtime, slot, provisional, profile, pending=pending)
            started = time.monotonic()
            frames, sandbox = self.run_candidate(task, candidate, runtime, slot, provisional, profile,
                                                 live=pending, phases=result.phases)
            own = time.monotonic() - started - frames.reference_wait_s
            ran = (frames, sandbox)
            if not pending.done and frames.failed_alone(sandbox):
                # Decided without the reference, which goes on for the task's later candidates
                # (a reference that compiles or autotunes for minutes no longer holds a verdict).
                result.phases["reference"] = round(time.monotonic() - began - own, 3)
                result.phases["reference.unfinished"] = round(time.monotonic() - began, 3)
                return provisional, (frames, sandbox, own)
            try:
                frames.reference_finished()  # nothing left to wait for if the child did
            except JudgeError:
                pass  # the reference's failure: raised below
            if not frames.plan_broken:
                early = (frames, sandbox, own)
            else:
                frames.comparisons.close()  # its runs are judged again on the final plan
        try:
            ref = pending.wait_done()
        except ReferenceFailed as exc:
            result.phases.update(pending.phases)
            raise _ReferenceFailedBeside(exc, ran) from exc
        result.phases.update(pending.phases)
        result.phases["reference"] = round(time.monotonic() - began - own, 3)
        result.phases["reference.wall"] = round(pending.wall_s, 3)
        if early is None and provisional is not None and provisional.runnable:
            result.phases["reference.replanned"] = round(own, 3)
        return ref, early

    def _failed_on_its_own(self, failed: _ReferenceFailedBeside, runtime: Runtime, result: EvalResult) -> bool:
        """The task's reference failed while this candidate ran beside it: the verdict is the
        candidate's own when it failed anyway (at import, by the contract or a guard, raising
        or crashing in a run, or unlike an output the reference did give) without being
        stopped for an output the reference did not give; flagged
        ``decided_without_reference``. False: a judge error, as before (``failed.error``)."""
        if failed.ran is None:
            return False
        frames, sandbox = failed.ran
        try:
            verdict = frames.finish(sandbox)
        except JudgeError:
            return False  # stopped for the reference's sake: nothing is known of it
        if verdict.first is None:
            return False
        apply_verdict(result, verdict)
        why = str(failed.error).splitlines()[0] if str(failed.error) else type(failed.error).__name__
        result.reason = f"{result.reason} (the task's reference failed here too: {why})"
        result.flags.append("decided_without_reference")
        self._no_performance(result, runtime, "only correct candidates are timed")
        return True

    def _no_performance(self, result: EvalResult, runtime: Runtime, why: str) -> None:
        result.performance_measured = False
        result.performance_note = INTERPRETER_NOTE if runtime.mode == "interpreter" else f"not measured: {why}"

    def _judge(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot, result: EvalResult) -> None:
        """One verdict. Timing is prepared up front (the reference's timed runs, the
        baseline's warm-up in the candidate's child), so that a correct candidate is timed
        without a second child, or once a task has a correct candidate
        (``prepare_timing``): its correctness is then checked in a child without timing,
        and a second child checks and times it; a wrong candidate costs no timing work.
        ``auto`` prepares up front while this judge has one verdict in flight and waits
        for a correct candidate while it has several (a benchmark, an agent's batch)."""
        gpu = runtime.mode == "gpu"
        choice = self.options.prepare_timing
        with self._lock:
            later = choice == "when_correct" or (choice == "auto" and self._in_flight > 1)
        up_front = not (gpu and later)  # the reference's timed runs come with its others
        mark = time.monotonic()
        pending = (self.references.begin(task, runtime, slot, timing=up_front, lazy=self._lazy())
                   if self._overlaps(runtime) else None)
        early: tuple[CandidateFrames, SandboxResult, float] | None = None
        if pending is not None:
            try:
                ref, early = self._overlapped(task, candidate, runtime, slot, result, pending)
            except _ReferenceFailedBeside as failed:
                if self._failed_on_its_own(failed, runtime, result):
                    return
                raise failed.error from None
        else:
            ref = self.references.get(task, runtime, slot, phases=result.phases, timing=up_front)
            result.phases["reference"] = round(time.monotonic() - mark, 3)
        result.skipped = list(ref.skipped)
        if self.options.check_outliers:
            result.skipped += [{"case": s["case"], "stage": "stage2", "reason": s["reason"]}
                               for s in ref.stage2_skipped]
        result.flags.extend(f for f in ref.flags if f not in result.flags)
        if not ref.runnable:
            result.flags.append("skipped")
            reasons = sorted({s["reason"] for s in ref.skipped})
            result.reason = "skipped: no case of this task can run here (" + "; ".join(reasons) + ")"
            self._no_performance(result, runtime, "the task was skipped")
            return
        timed = ref.timed if gpu else []
        profile = self.resolve_hardware() if timed else None
        failed_alone = early is not None and early[0].decided_alone
        if timed and ref.timing_ready and not failed_alone:  # its warm-up overlaps the candidate's checks
            self._start_timer(task, runtime, slot, ref)
        # An early child's own time counts as candidate time (its waits for the reference not).
        mark = time.monotonic() - (early[2] if early else 0.0)
        if early is not None:
            frames, sandbox, _ = early
        else:
            if timed and task.eager and ref.timing_ready:  # overlaps the candidate's checks
                self.eager.prefetch(task, runtime, slot, ref, profile)
            frames, sandbox = self.run_candidate(task, candidate, runtime, slot, ref, profile,
                                                 phases=result.phases)
        waited = 0.0
        preparing = frames.phases.pop("timing_wait", 0.0)
        if preparing:
            result.phases["timing.prepare"] = round(preparing, 3)
        untimed = frames.untimed
        verdict = frames.finish(sandbox)
        gating = frames.gating
        waited += gating.waited_s
        result.phases["candidate"] = round(time.monotonic() - mark - gating.timing_s - waited - preparing, 3)
        if waited:
            result.phases["device_wait"] = round(waited, 3)
            if gating.timing_wait_s:
                result.phases["device_wait.timing"] = round(gating.timing_wait_s, 3)
            if gating.spare_wait_s:
                result.phases["device_wait.spares"] = round(gating.spare_wait_s, 3)
        for name, seconds in frames.phases.items():  # parts of "candidate"
            result.phases[f"candidate.{name}"] = round(seconds, 3)
        if ref.weak:
            verdict.flag("weak_test")
        apply_verdict(result, verdict)
        if not gpu:
            self._no_performance(result, runtime, "")
            result.shapes = [shape_stub(c) for c in ref.runnable if c.timed]
            return
        if not result.correct:
            self._no_performance(result, runtime, "only correct candidates are timed")
            return
        if not timed or untimed:
            result.flags.extend(["not_timed"] if untimed else [])
            self._no_performance(result, runtime, untimed or "the task marks no case as timed")
            return
        result.phases["timing"] = round(gating.timing_s, 3)
        apply_timing(task, ref, frames.timings, frames.timing_errors, sandbox.completed, sandbox.stderr,
                     profile, self.options, result, self.children.for_task(task, slot))
        if result.performance_measured and task.eager:
            self.eager.apply(task, runtime, slot, ref, profile, result)
