"""Reference outputs: computed once per (task, device, seeds), kept for every later candidate.

The reference runs in a trusted child that never sees candidate code. Its
outputs stay in the judge's memory (up to ``reference_cache_mb``) and, with
``reference_cache_dir``, on disk for the tasks' fixed seeds (secret seeds and
the timing seed are drawn anew by every judge and never written). Several
candidates of one task wait for one reference run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from geak_core.api.tasks import Case, Task
from geak_core.kit.sandbox import Replier

from geak_evaluator_triton.autotuning import AutotuneLog, allow_for, read_autotuners
from geak_evaluator_triton.candidate_run import Gating
from geak_evaluator_triton.child_pool import Children, task_payload
from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.protocol import GO, FrameHandler, where
from geak_evaluator_triton.reference_run import (
    DiskCache,
    ReferenceRun,
    ReferenceTimes,
    candidate_budget,
    case_table,
    compile_work,
    nbytes_of,
    run_from_table,
    scaled_budget,
)
from geak_evaluator_triton.run_compare import JudgeError, ReferenceFailed, tail
from geak_evaluator_triton.verdict import describe_exception, trim_traceback

# (seed, timed case names, budget in seconds) -> (outputs keyed ("timing", case, seed), cases
# the reference raised on), or None where the producer could not (ReferenceStore.ensure_timing).
TimedOutputs = Callable[[int, list[str], float], "tuple[dict[tuple[str, str, int], Any], dict[str, str]] | None"]


class PendingReference:
    """A reference child still running, for the verdict that started it (``overlap_reference``):
    its case table as soon as the child sends it, each output as it arrives, then the finished
    run or its failure. The verdict's candidate child runs meanwhile and waits here for each
    output it is compared with."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.provisional: ReferenceRun | None = None  # from the case table; its outputs fill in
        self.run: ReferenceRun | None = None
        self.error: BaseException | None = None
        self.redone = False  # run again on other seeds: the provisional plan no longer holds
        self.done = False
        self.phases: dict[str, float] = {}
        self.started = time.monotonic()
        self.wall_s = 0.0

    def table(self, provisional: ReferenceRun) -> None:
        with self._cond:
            if self.provisional is None and not self.redone:
                self.provisional = provisional
            self._cond.notify_all()

    def arrived(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def redo(self) -> None:
        with self._cond:
            self.redone = True
            self._cond.notify_all()

    def finish(self, run: ReferenceRun | None = None, error: BaseException | None = None) -> None:
        with self._cond:
            self.run, self.error, self.done = run, error, True
            self.wall_s = time.monotonic() - self.started
            self._cond.notify_all()

    def wait_table(self) -> ReferenceRun | None:
        """The provisional run (cases, seeds, outputs as they come), or None when the reference
        ended, failed or was redone before its table came (then ``wait_done`` tells the rest)."""
        with self._cond:
            self._cond.wait_for(lambda: self.provisional is not None or self.done or self.redone)
            return None if self.redone else self.provisional

    def wait_output(self, index: tuple[str, str, int]) -> bool:
        """Until the reference has the output ``index`` (True), or will not have it here
        (False: it ended, failed or was redone without it)."""
        with self._cond:
            outputs = self.provisional.outputs if self.provisional is not None else {}
            self._cond.wait_for(lambda: index in outputs or self.done or self.redone)
            return index in outputs and not self.redone

    def wait_finished(self, timeout_s: float) -> bool:
        """Until the reference ended (True) or ``timeout_s`` passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.done, timeout_s)

    def wait_done(self) -> ReferenceRun:
        """The finished run; raises what the reference raised (a JudgeError when it failed)."""
        with self._cond:
            self._cond.wait_for(lambda: self.done)
        if self.error is not None:
            raise self.error
        assert self.run is not None
        return self.run


def _plan_only(run: ReferenceRun) -> ReferenceRun:
    """A copy of a failed reference's provisional run with no outputs: its candidate is planned
    on it and compares nothing."""
    return dataclasses.replace(run, outputs={}, noise={}, oracle={})


class LazyReference:
    """A reference this judge has not run, whose case table an earlier judge recorded
    (``lazy_reference``): the verdict's candidate is planned on that table at once, and the
    reference child starts only when the candidate needs it (``need``): for its first run
    that produced outputs (to compare them), or at its first run on a seed that is not one
    of the task's fixed seeds (those the recorded run finished on; on another seed the
    reference itself may fail, which changes the plan). A candidate that fails before that
    (at import, by the contract, or raising, crashing or timing out on a fixed seed's run)
    is decided on the table alone: the frames set ``decided`` and ``wait_done`` gives the
    table's run. Otherwise it stands for the ``PendingReference`` it started."""

    lazy = True

    def __init__(self, provisional: ReferenceRun, fixed_seeds: list[int],
                 start: Callable[[], PendingReference]) -> None:
        self.provisional = provisional
        self.fixed = frozenset(fixed_seeds)
        self._start = start
        self._real: PendingReference | None = None
        self._lock = threading.Lock()
        self.decided = False  # set by the candidate's frames: it failed before needing the reference

    @property
    def started(self) -> bool:
        return self._real is not None

    @property
    def done(self) -> bool:
        return self._real is not None and self._real.done

    @property
    def phases(self) -> dict[str, float]:
        return self._real.phases if self._real is not None else {}

    @property
    def wall_s(self) -> float:
        return self._real.wall_s if self._real is not None else 0.0

    def need(self) -> PendingReference:
        """The reference's run, started now if it has not been."""
        with self._lock:
            if self._real is None:
                self._real = self._start()
            return self._real

    def wait_table(self) -> ReferenceRun | None:
        return self.provisional

    def wait_output(self, index: tuple[str, str, int]) -> bool:
        real = self.need()
        table = real.wait_table()
        if table is None:
            return False
        # The candidate's frames hold this run: its outputs are the reference's as they come.
        self.provisional.outputs = table.outputs
        self.provisional.noise = table.noise
        self.provisional.oracle = table.oracle
        return real.wait_output(index)

    def wait_done(self) -> ReferenceRun:
        if self._real is None and self.decided:
            return self.provisional
        return self.need().wait_done()


class ReferenceStore:
    def __init__(self, children: Children, secret_seeds: list[int], timing_seed: int) -> None:
        self.children = children
        self.options = children.options
        self.secret_seeds = secret_seeds
        self.timing_seed = timing_seed
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, ReferenceRun] = OrderedDict()
        self._key_locks: dict[str, threading.Lock] = {}
        # References being computed by begin() (a verdict's or prefetch()'s): a later verdict
        # of the task shares the run instead of waiting for it blind.
        self._pending: dict[str, PendingReference] = {}
        # References that failed in this judge: every later candidate of the task gets the
        # same judge error at once instead of another run of up to reference_timeout_s.
        self._failed: dict[str, JudgeError] = {}
        root = self.options.reference_cache_dir
        self._disk = DiskCache(root) if root else None
        self.times = ReferenceTimes(children.cache_dir("reference-times"))
        # key() of each task seen, with what it was computed from: the scheduler asks for the
        # keys of many waiting jobs each time a slot frees.
        self._keys: dict[int, tuple[Task, Runtime, tuple[int, int, int] | None, str]] = {}
        # Case tables recorded by earlier judges (ReferenceTimes.table), read once per key.
        self._tables: dict[str, dict[str, Any] | None] = {}
        # The case tables of references that failed here (_keep_failed_table).
        self._failed_tables: dict[str, ReferenceRun | None] = {}

    def seeds_for(self, task: Task) -> list[int]:
        fixed = list(self.options.seeds) if self.options.seeds else list(task.seeds)
        return fixed + [s for s in self.secret_seeds if s not in fixed]

    def fixed_seeds(self, task: Task) -> list[int]:
        """The seeds of ``seeds_for`` that are not this judge's secret ones."""
        return [s for s in self.seeds_for(task) if s not in self.secret_seeds]

    def key(self, task: Task, runtime: Runtime) -> str:
        """What identifies the reference run of ``task`` here: the task as a child receives it,
        its reference file's content, the runtime and the options that change the outputs.
        Kept per task object until its reference file changes (tasks are not changed once
        given to the judge)."""
        stamp = _file_stamp(task.reference)
        memo = self._keys.get(id(task))
        if memo is not None and memo[0] is task and memo[1] is runtime and memo[2] == stamp:
            return memo[3]
        payload = task_payload(task)
        content = ""
        if payload.get("reference") and os.path.isfile(payload["reference"]):
            with open(payload["reference"], "rb") as handle:
                content = hashlib.sha256(handle.read()).hexdigest()
        versions = runtime.probe.get("torch"), runtime.probe.get("triton")
        blob = json.dumps(
            [payload, content, runtime.mode, runtime.device_name, runtime.case_set, versions,
             self.options.check_outliers, self.options.heavy_case_mb, self.options.noise_multiple > 0],
            sort_keys=True, default=str,
        )
        key = hashlib.sha256(blob.encode()).hexdigest()[:32]
        self._keys[id(task)] = (task, runtime, stamp, key)
        return key

    def begin(self, task: Task, runtime: Runtime, slot: Slot, timing: bool = True,
              lazy: bool = False) -> PendingReference | LazyReference | None:
        """Start computing the reference of ``task`` in a thread of its own and return at once;
        None when it is kept already or another verdict is computing it (``get`` then waits
        as usual). The caller reads the case table and the outputs as they come. ``lazy``:
        where an earlier judge recorded the task's case table, a ``LazyReference`` instead,
        which starts the run only when the caller's candidate needs it."""
        key = self.key(task, runtime)
        provisional = self.recorded_table(task, runtime) if lazy else None
        with self._lock:
            shared = self._pending.get(key)
            if shared is not None:
                return shared  # being computed (prefetched, or for another verdict): share it
            failed = self._failed.get(key)
            if failed is not None:
                # Its case table, where the failed run sent one: the candidate runs on it
                # (with no outputs to compare) and is decided if it fails on its own.
                done = PendingReference()
                table = self._failed_tables.get(key)
                if table is not None:
                    done.table(_plan_only(table))
                done.finish(error=failed)
                return done
            kept = key in self._runs
            busy = self._key_locks.get(key)
            if kept or (busy is not None and busy.locked()):
                return None
            if provisional is not None:
                return LazyReference(provisional, self.fixed_seeds(task),
                                     lambda: self._start_now(task, runtime, slot, timing))
            pending = self._pending[key] = PendingReference()

        def compute() -> None:
            try:
                run = self.get(task, runtime, slot, phases=pending.phases, timing=timing, live=pending)
            except BaseException as exc:  # the verdict's thread raises it (wait_done)
                pending.finish(error=exc)
            else:
                pending.finish(run)
            finally:
                with self._lock:
                    if self._pending.get(key) is pending:
                        del self._pending[key]

        threading.Thread(target=compute, name="geak-reference", daemon=True).start()
        return pending

    def _start_now(self, task: Task, runtime: Runtime, slot: Slot, timing: bool) -> PendingReference:
        """The reference's run for a ``LazyReference`` that needs it: begun now, shared with a
        run already under way, or (kept, or being computed by ``get``) the finished run."""
        pending = self.begin(task, runtime, slot, timing=timing)
        if pending is not None:
            return pending
        done = PendingReference()

        def wait() -> None:
            try:
                run = self.get(task, runtime, slot, timing=timing)
            except BaseException as exc:
                done.finish(error=exc)
            else:
                done.table(run)
                done.finish(run)

        threading.Thread(target=wait, name="geak-reference-wait", daemon=True).start()
        return done

    def _keep_failed_table(self, task: Task, runtime: Runtime, key: str,
                           run: ReferenceRun | None) -> ReferenceRun | None:
        """The case table of a reference that failed: what its run sent (``run``), else what
        an earlier judge's failed run recorded (``ReferenceTimes.failed_table``), if on this
        judge's fixed seeds."""
        if run is None:
            run = self._run_from_record(task, self._on_these_seeds(task, self.times.failed_table(key)), 0.0)
        with self._lock:
            self._failed_tables[key] = run
        return run

    def _table(self, task: Task, runtime: Runtime) -> dict[str, Any] | None:
        """The case table an earlier judge recorded for this task's reference here, if it ran
        on this judge's fixed seeds; read once per key and judge (``_tables``)."""
        key = self.key(task, runtime)
        with self._lock:
            known = key in self._tables
            table = self._tables.get(key)
        if not known:
            table = self.times.table(key)
            with self._lock:
                self._tables[key] = table
        return self._on_these_seeds(task, table)

    def _on_these_seeds(self, task: Task, table: dict[str, Any] | None) -> dict[str, Any] | None:
        """``table`` if it was recorded on this judge's fixed seeds, else None."""
        return table if table is not None and table.get("fixed_seeds") == self.fixed_seeds(task) else None

    def _run_from_record(self, task: Task, table: dict[str, Any] | None, own_s: float) -> ReferenceRun | None:
        """A provisional run on this judge's seeds from a recorded case table (None: none, or
        unreadable)."""
        if table is None:
            return None
        try:
            return run_from_table(table, self.seeds_for(task), self.options.heavy_case_mb * 2**20, own_s)
        except (KeyError, TypeError, ValueError):
            return None

    def has_table(self, task: Task, runtime: Runtime) -> bool:
        return self._table(task, runtime) is not None

    def recorded_table(self, task: Task, runtime: Runtime) -> ReferenceRun | None:
        """A provisional run (the plan, no outputs) from the recorded case table (``_table``);
        None without one."""
        table = self._table(task, runtime)
        if table is None:
            return None
        run = self._run_from_record(task, table, self.times.own_s(self.key(task, runtime)))
        if run is None:
            return None
        run.timing_ready = runtime.mode != "gpu"  # its timed runs come with the reference's, if needed
        return run

    def expected_cost(self, task: Task, runtime: Runtime) -> float:
        """Roughly how long the reference of ``task`` will take, for ordering only: its seconds
        last time when an earlier judge ran it (a failed run's too), else a second per unit of
        its file's ``compile_work`` (about the median on the published TritonBench-G set)."""
        known = self.times.cost_s(self.key(task, runtime))
        return known if known > 0 else 1.0 * compile_work(task_payload(task).get("reference"))

    def known(self, task: Task, runtime: Runtime) -> bool:
        """The reference of ``task`` is decided here: kept, or failed."""
        key = self.key(task, runtime)
        with self._lock:
            return key in self._runs or key in self._failed

    def get(self, task: Task, runtime: Runtime, slot: Slot, phases: dict[str, float] | None = None,
            timing: bool = True, live: PendingReference | None = None) -> ReferenceRun:
        """The reference outputs of ``task`` (cached); raises JudgeError if the reference fails.

        ``phases``: where a reference child ran for this call, its parts are added
        (``reference.start``, ``reference.runs``, ``reference.timing``). ``timing``:
        also the timed cases' runs on the timing seed (GPU); without it they are left
        for ``ensure_timing``, which a busy judge calls once a candidate is correct.
        ``live``: told of the case table and each output as the child sends them."""
        key = self.key(task, runtime)
        with self._key_lock(key):
            with self._lock:
                run = self._runs.get(key)
                if run is not None:
                    self._runs.move_to_end(key)
                failed = self._failed.get(key)
            if failed is not None:
                raise failed
            if run is None:
                began = time.monotonic()
                budget = self.budget(key)
                earlier = self.times.timed_out(key)
                if earlier is not None and earlier["budget_s"] < budget:
                    earlier = None  # more time now: try again
                try:
                    if earlier is not None:
                        kept_table = self._keep_failed_table(task, runtime, key, None)
                        if live is not None and kept_table is not None:  # its candidate runs on it
                            live.table(_plan_only(kept_table))
                        raise ReferenceFailed(
                            f"the reference of {task.key} did not finish in {earlier['budget_s']:.0f} s when a "
                            f"judge ran it on {earlier['when']}, and is not run again with no more time: raise "
                            f"reference_timeout_s, or remove {self.times.path(key)}, to try again")
                    run = self._compute(task, runtime, slot, key, budget, timing, live)
                except JudgeError as exc:
                    table_run = live.provisional if live is not None and not live.redone else None
                    if earlier is None:
                        self._keep_failed_table(task, runtime, key, table_run)
                    with self._lock:
                        self._failed[key] = exc
                        self._tables[key] = None
                    if earlier is None:
                        self.times.store(key, time.monotonic() - began, failed=True,
                                         timed_out_s=exc.timed_out_s if isinstance(exc, ReferenceFailed) else 0.0,
                                         table=(case_table(table_run, self.fixed_seeds(task))
                                                if table_run is not None else None))
                    raise
                clean = not run.flags and run.seeds == self.seeds_for(task)
                table = case_table(run, self.fixed_seeds(task)) if clean else None
                self.times.store(key, run.own_s, table=table)
                if phases is not None:
                    phases.update({f"reference.{k}": round(v, 3) for k, v in run.phases.items()})
                with self._lock:
                    self._tables[key] = table
                    self._runs[key] = run
                    self._evict()
            if timing and not run.timing_ready:
                self._add_timing(task, runtime, slot, run, phases)
            return run

    def ensure_timing(self, task: Task, runtime: Runtime, slot: Slot, run: ReferenceRun,
                      phases: dict[str, float] | None = None, producer: TimedOutputs | None = None) -> None:
        """Add the timed cases' runs on the timing seed to ``run`` if it lacks them (once).

        ``producer(seed, cases, budget_s)``: another trusted process that runs the reference
        (the baseline's timer, warm already), giving (outputs, cases it raised on), or None when
        it could not; then, and without one, a reference child runs them."""
        if run.timing_ready:
            return
        with self._key_lock(self.key(task, runtime)):
            if not run.timing_ready:
                self._add_timing(task, runtime, slot, run, phases, producer)

    def planned_timing_seed(self, run: ReferenceRun) -> int:
        """The seed ``run``'s timed runs are on, or will be on once ``ensure_timing`` adds them."""
        if run.timing_ready and run.timing_seed is not None:
            return run.timing_seed
        return run.seeds[0] if "reference_seed_fallback" in run.flags else self.timing_seed

    def _add_timing(self, task: Task, runtime: Runtime, slot: Slot, run: ReferenceRun,
                    phases: dict[str, float] | None, producer: TimedOutputs | None = None) -> None:
        began = time.monotonic()
        # a reference judged on the protocol's seed alone is timed on it too (see _compute)
        seed = self.planned_timing_seed(run)
        # Its budget scales from the reference's own first run, as a candidate's does.
        budget, _ = candidate_budget(run, self.options.reference_timeout_s, self.options.budget_scale,
                                     self.options.budget_floor_s)
        produced = producer(seed, [c.name for c in run.runnable if c.timed], budget) if producer else None
        if produced is not None:
            outputs, untimed = produced
            if phases is not None:
                phases["reference.timing_in_timer"] = 1.0
        else:
            extra = self.run(task, runtime, slot, [], all_seeds=run.seeds, timing_seed=seed, timeout_s=budget)
            outputs, untimed = extra.outputs, extra.untimed
        run.outputs.update(outputs)
        run.untimed.update(untimed)
        run.timing_seed = seed
        run.nbytes = nbytes_of(list(run.outputs.values()))
        run.timing_ready = True
        if phases is not None:
            phases["reference.timing"] = round(time.monotonic() - began, 3)

    def budget(self, key: str) -> float:
        """A reference child's wall-clock budget: ``reference_timeout_s`` for a reference
        never run here before; for one an earlier judge ran (``ReferenceTimes``), scaled from
        its own seconds as a candidate's budget is (``budget_scale``, at least
        ``budget_floor_s``), at most ``reference_timeout_s``."""
        return scaled_budget(self.times.own_s(key), self.options.reference_timeout_s, self.options.budget_scale,
                             self.options.budget_floor_s)

    def _key_lock(self, key: str) -> threading.Lock:
        """One lock per reference key: the candidates of one task wait for one reference run."""
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def clear(self) -> None:
        with self._lock:
            self._runs.clear()
            self._failed.clear()
            self._failed_tables.clear()

    def _evict(self) -> None:
        limit = self.options.reference_cache_mb * 1024 * 1024
        while len(self._runs) > 1 and sum(r.nbytes for r in self._runs.values()) > limit:
            self._runs.popitem(last=False)

    def _compute(self, task: Task, runtime: Runtime, slot: Slot, key: str, budget_s: float, timing: bool = True,
                 live: PendingReference | None = None) -> ReferenceRun:
        seeds = self.seeds_for(task)
        fixed = self.fixed_seeds(task)
        gpu = runtime.mode == "gpu"
        timing_seed = self.timing_seed if gpu and timing else None
        cached = self._disk.load(key, fixed) if self._disk else {}
        missing = [s for s in seeds if s not in cached.get("seeds", [])]
        flags: list[str] = []
        try:
            if cached and not missing and timing_seed is None:
                run = cached["run"]
                run.phases = {}  # no child ran
                cached = {}
            else:  # the timing seed is secret and never on disk: its runs are always computed
                run = self.run(task, runtime, slot, missing if cached else seeds, all_seeds=seeds,
                               timing_seed=timing_seed, live=live, timeout_s=budget_s)
        except JudgeError as exc:
            # A reference that fails only under the judge's extra seeds is judged on the
            # task's own first seed alone, with a flag (published harnesses often hold
            # references that index out of bounds for other inputs).
            protocol_seed = seeds[0]
            failed_seed = exc.seed if isinstance(exc, ReferenceFailed) else None
            if failed_seed is None or failed_seed == protocol_seed:
                raise
            if live is not None:
                live.redo()
            run = self.run(task, runtime, slot, [protocol_seed], all_seeds=[protocol_seed],
                           timing_seed=protocol_seed if timing_seed is not None else None)
            seeds, cached = [protocol_seed], {}
            flags.append("reference_seed_fallback")
        if cached:
            run.outputs.update(cached["run"].outputs)
            run.noise.update(cached["run"].noise)
        run.seeds = seeds
        run.flags = flags
        run.timing_ready = not gpu or timing_seed is not None
        run.heavy_bytes = self.options.heavy_case_mb * 2**20
        run.nbytes = nbytes_of(list(run.outputs.values()))
        if self._disk and not flags:
            self._disk.store(key, run, fixed)
        return run

    def run(self, task: Task, runtime: Runtime, slot: Slot, seeds: list[int], *, oracle: bool = False,
            all_seeds: list[int] | None = None, timing_seed: int | None = None,
            live: PendingReference | None = None, timeout_s: float | None = None) -> ReferenceRun:
        """One reference child over ``seeds``; holds the device shared while it runs, for at
        most ``timeout_s`` (``reference_timeout_s`` when not given).

        ``live``: given, once the child's case table comes, a provisional run on
        ``all_seeds`` whose outputs fill in as they arrive (the same dicts as the
        finished run's)."""
        started = time.monotonic()
        every_seed = all_seeds or self.seeds_for(task)
        args = {
            "task": task_payload(task),
            "case_set": runtime.case_set,
            "seeds": seeds,
            "all_seeds": every_seed,
            "heavy_bytes": self.options.heavy_case_mb * 2**20,
            "outliers": self.options.check_outliers,
            "oracle": oracle,
            "noise": self.options.noise_multiple > 0 and not oracle,
            "timing_seed": timing_seed,
        }
        # With other slots on its device, the child holds the gate shared for each run (it
        # asks before each), not while it starts, imports and draws inputs: a timing phase
        # waiting for the device waits for runs, not for a whole reference process.
        sharing = runtime.mode == "gpu" and runtime.shares_device(slot)
        args["gate"] = sharing
        reader = _ReferenceFrames(task, Gating(slot, shared_runs=True) if sharing else None,
                                  allowance=(self.options.autotune_allowance_s, self.options.autotune_allowance_max_s))
        if live is not None:
            gpu = runtime.mode == "gpu"

            def announce(table: dict[str, Any]) -> None:
                provisional = self._from_table(table, reader, every_seed, timing_seed)
                provisional.timing_ready = not gpu or timing_seed is not None
                live.table(provisional)

            reader.live, reader.announce = live, announce
        try:
            with contextlib.nullcontext() if sharing else slot.gate.shared():
                result = self.children.run("reference", args, slot.env,
                                           timeout=timeout_s or self.options.reference_timeout_s,
                                           cache="reference", on_message=reader, slot=slot)
        finally:
            if reader.gating is not None:
                reader.gating.release()
        if reader.failure is not None:
            raise reader.failure
        if reader.table is None or not result.completed:
            tuning = reader.autotune.during() if result.timed_out else ""
            ended = f"it ran out of time {tuning} ({result.describe_exit()})" if tuning else result.describe_exit()
            raise ReferenceFailed(f"the reference of {task.key} did not finish: {ended}" + tail(result.stderr),
                                  timed_out_s=(timeout_s or self.options.reference_timeout_s) if result.timed_out else 0.0)
        run = self._from_table(reader.table, reader, seeds, timing_seed)
        run.wall_s = time.monotonic() - started
        run.phases = {"start": (reader.table_at or started) - started, "runs": reader.runs_s,
                      **reader.autotune.phases()}
        run.own_s = max(0.0, run.wall_s - result.waited_s)
        return run

    def _from_table(self, table: dict[str, Any], reader: _ReferenceFrames, seeds: list[int],
                    timing_seed: int | None) -> ReferenceRun:
        """A run from the child's case table and what its reader holds (the reader's dicts
        themselves, so that a provisional run sees outputs that arrive later)."""
        return ReferenceRun(
            cases=[Case.from_dict(c) for c in table["cases"]],
            skipped=table["skipped"],
            stage2_skipped=table["stage2_skipped"],
            custom_compare=bool(table["custom_compare"]),
            seeds=seeds,
            heavy_bytes=self.options.heavy_case_mb * 2**20,
            outputs=reader.outputs,
            oracle=reader.oracles,
            noise=reader.noise,
            timing_seed=timing_seed,
            untimed=reader.untimed,
            reference_file=table.get("reference_file", ""),
            weak=reader.weak,
        )


class _ReferenceFrames(FrameHandler):
    """Collects a reference child's frames; the first failure is kept as a JudgeError."""

    def __init__(self, task: Task, gating: Gating | None = None, allowance: tuple[float, float] = (0.0, 0.0)) -> None:
        self.task = task
        self.gating = gating  # holds the device gate shared for each run (None: not asked)
        # Seconds allowed for autotuning a config a case, and at most (autotuning.allowance).
        self.allowance = allowance
        self.autotune = AutotuneLog()
        self.replier: Replier | None = None
        self.table: dict[str, Any] | None = None
        self.outputs: dict[tuple[str, str, int], Any] = {}
        self.oracles: dict[tuple[str, str, int], Any] = {}
        self.noise: dict[tuple[str, str, int], Any] = {}
        self.untimed: dict[str, str] = {}
        self.weak: list[str] = []
        self.failure: JudgeError | None = None
        self.table_at: float | None = None
        self.runs_s = 0.0
        self.live: PendingReference | None = None  # told of each output as it arrives
        self.announce: Any = None  # called with the case table

    def __call__(self, message: Any, replier: Replier) -> Any:
        self.replier = replier
        return self.handle(message)

    def on_start(self, frame: dict[str, Any]) -> Any:
        if self.gating is not None and self.replier is not None:
            self.gating.hold_shared(self.replier, capped=False)  # a trusted run: not capped
            self.replier.send(GO)
        return frame

    def on_compiling(self, frame: dict[str, Any]) -> Any:
        """A compile inside the run (an autotuner's configs, say): the device is free for the
        others meanwhile; the child asks again (``start``, ``resume``) before it runs."""
        if self.gating is not None:
            self.gating.release()
        return frame

    def on_cases(self, frame: dict[str, Any]) -> Any:
        self.table = frame
        self.table_at = time.monotonic()
        if self.announce is not None:
            self.announce(frame)
        return {"kind": "cases"}

    def on_ran(self, frame: dict[str, Any]) -> Any:  # outputs on the host: the device is free
        if self.gating is not None:
            self.gating.release()
        return {"kind": "ran"}

    def on_autotuners(self, frame: dict[str, Any]) -> Any:
        """The reference is imported: its autotuners, and the cases it runs (a new key each,
        at most), for which its deadline is extended."""
        cases = frame.get("cases")
        self.autotune.cases = cases if type(cases) is int and cases >= 0 else 0
        if self.replier is not None:
            allow_for(self.replier, read_autotuners(frame.get("autotuners")), self.autotune.cases, *self.allowance)
        return frame

    def on_autotune(self, frame: dict[str, Any]) -> Any:
        self.autotune.started(frame)
        return frame

    def on_autotuned(self, frame: dict[str, Any]) -> Any:
        self.autotune.ended(frame)
        return frame

    def on_run(self, frame: dict[str, Any]) -> Any:
        if self.gating is not None:
            self.gating.release()
        index = (frame["stage"], frame["case"], frame["seed"])
        self.runs_s += float(frame.get("run_s") or 0.0)
        self.weak += [w for w in frame.get("weak", []) if w not in self.weak]
        if "noise" in frame:
            self.noise[index] = frame["noise"]
        if "oracle" in frame:
            self.oracles[index] = frame["oracle"]
        elif "oracle_error" in frame:
            self.oracles[index] = {"$oracle_error": frame["oracle_error"]}
        self.outputs[index] = frame["outputs"]  # last: a waiting candidate finds its noise too
        if self.live is not None:
            self.live.arrived()
        return {"kind": "run", "stage": frame["stage"], "case": frame["case"], "seed": frame["seed"]}

    def on_error(self, frame: dict[str, Any]) -> Any:
        if self.gating is not None:
            self.gating.release()
        if frame.get("stage") == "timing":
            self.untimed[frame["case"]] = f"the reference raised on the timing inputs: {describe_exception(frame)}"
            return {"kind": "error"}
        self._fail(frame, f" at {where(frame)}")
        return {"kind": "error"}

    def on_setup_error(self, frame: dict[str, Any]) -> Any:
        self._fail(frame, "")
        return {"kind": "error"}

    on_import_error = on_setup_error

    def _fail(self, frame: dict[str, Any], location: str) -> None:
        if self.failure is None:
            self.failure = ReferenceFailed(
                f"the reference of {self.task.key} failed{location}: {describe_exception(frame)}\n"
                + (trim_traceback(frame.get("error")) or ""), seed=frame.get("seed"))


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    """(inode, size, modification time) of ``path``; None where there is no such file."""
    try:
        info = os.stat(path) if path else None
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns) if info else None
