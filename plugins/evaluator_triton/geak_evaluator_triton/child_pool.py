"""Starting the judge's children: sandbox settings, Triton caches, what a child is told.

Every child is confined (``geak_core.kit.confinement``) unless the options say
``confinement = "none"``: it may write only its private directory and its
Triton cache, which is the reference's for the judge's trusted children
(reference, timer, eager, compare) and one of the candidate's own for a
candidate (``candidates/<hash of its syntax tree>``: what one candidate compiled
cannot reach another, while the same program judged again finds its kernels).
On a GPU, a child's CUDA context is created before it confines itself (the
driver needs what a confined process may not touch): spares do it while they
wait, and a child started for a job preloads the same module.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import threading
import time
from typing import Any

from geak_core.api.tasks import Task
from geak_core.engine.plugins import package_folders
from geak_core.kit.confinement import Confinement
from geak_core.kit.limits import ChildLimits, physical_memory_mb
from geak_core.kit.sandbox import SandboxResult, SpareChild, Wrapper, run_sandboxed, start_spare

from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.static_checks import parse

CHILD = "geak_evaluator_triton.child_jobs"
# Names the device's lock file to a spare child (warm.py), which removes it once used.
DEVICE_LOCK_VARIABLE = "GEAK_SPARE_DEVICE_LOCK"
PRELOAD = ("geak_evaluator_triton.warm",)
SPARE_READY_S = 60.0  # the longest the first wave of spares holds up the others
FIRST_WAVE = 2  # spares started at once when a judge starts; the others once these are up


class Children:
    """Runs ``child_jobs`` jobs for one evaluator: same options, same runtime, same caches."""

    def __init__(self, options: TritonEvaluatorOptions) -> None:
        self.options = options
        self.runtime: Runtime | None = None
        self._spares: dict[int, SpareChild] = {}
        self._spare_lock = threading.Lock()
        self._closed = False

    # -- spare children ---------------------------------------------------------

    def use_spares(self) -> bool:
        choice = self.options.spare_children
        if choice == "auto":
            return self.runtime is not None and self.runtime.mode == "gpu"
        return choice == "on"

    def start_spares(self) -> None:
        """One waiting child per slot, started in the background in two waves: the first
        ``FIRST_WAVE`` at once (a first verdict's reference and candidate children), the
        others once those are ready. Started all at once, eight children importing torch and
        creating CUDA contexts compete with the first jobs for the CPU and the driver; one
        after another, the last is up only half a minute later (on an H100 host, measured:
        a warm verdict and eight at once then waited for spares still starting)."""
        if self.runtime is None or not self.use_spares():
            return
        slots = list(self.runtime.slots)
        threading.Thread(target=self._start_waves, args=(slots,), name="geak-spares", daemon=True).start()

    def _start_waves(self, slots: list[Slot]) -> None:
        first = [spare for slot in slots[:FIRST_WAVE] if (spare := self._start_spare(slot)) is not None]
        for spare in first:
            spare.wait_ready(SPARE_READY_S)
        for slot in slots[FIRST_WAVE:]:
            self._start_spare(slot)

    def settle(self, timeout_s: float) -> bool:
        """Wait until every slot has a spare that is up (at once when spares are off), or
        ``timeout_s`` passed; whether they all are. A spare is replaced after each job, so
        right after a verdict its slot's next one is still starting."""
        if self.runtime is None or not self.use_spares():
            return True
        slots = list(self.runtime.slots)
        deadline = time.monotonic() + timeout_s
        while True:
            with self._spare_lock:
                if self._closed:
                    return False
                spares = [self._spares.get(slot.index) for slot in slots]
            if all(spare is not None and spare.ready() for spare in spares):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _replenish(self, slot: Slot) -> None:
        threading.Thread(target=self._start_spare, args=(slot,), name="geak-spare", daemon=True).start()

    def _start_spare(self, slot: Slot) -> SpareChild | None:
        with self._spare_lock:
            if self._closed or slot.index in self._spares:
                return None
        env = dict(slot.env)
        if slot.gate.lock_file:  # the spare creates its CUDA context outside any timing (warm.py)
            env[DEVICE_LOCK_VARIABLE] = slot.gate.lock_file
        # Triton's driver helpers, compiled once by a spare's preload, in the trusted cache.
        env["TRITON_CACHE_DIR"] = self.cache_dir("reference")
        spare = start_spare(env, preload=PRELOAD, isolate=bool(self.runtime and self.runtime.isolate),
                            limits=self.limits(), env_allow=tuple(self.options.child_env_allow))
        if spare is None:
            return None
        with self._spare_lock:
            if self._closed or slot.index in self._spares:
                spare.close()
                return None
            self._spares[slot.index] = spare
        return spare

    def _take_spare(self, slot: Slot | None) -> tuple[SpareChild | None, Slot | None]:
        """The slot's own spare, else one of a slot of the same device (the same
        environment): a verdict's reference and candidate children follow each other on
        one slot faster than its spare is replaced. Returns the spare and whose it was."""
        if slot is None or not self.use_spares() or self.runtime is None:
            return None, None
        with self._spare_lock:
            owners = [slot] + [other for other in self.runtime.slots if other is not slot
                               and other.gate is slot.gate and other.env == slot.env]
            owners = [owner for owner in owners if owner.index in self._spares]
            if not owners:
                return None, None
            # A spare that is up before one still starting; the slot's own before another's.
            owner = next((o for o in owners if self._spares[o.index].ready()), owners[0])
            return self._spares.pop(owner.index), owner

    def close(self) -> None:
        with self._spare_lock:
            self._closed = True
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:
            spare.close()

    def cache_dir(self, role: str) -> str:
        root = self.options.triton_cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "geak", "triton")
        path = os.path.join(root, role)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def candidate_cache(self, code: str) -> str:
        """The Triton cache of one candidate's program (the only one its child may write): by
        the hash of its syntax tree, so copies that differ in comments or layout share it (the
        same program), and any other candidate has its own."""
        try:
            program = ast.dump(parse(code))
        except (SyntaxError, ValueError):
            program = code
        digest = hashlib.sha256(program.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return self.cache_dir(os.path.join("candidates", digest))

    def limits(self) -> ChildLimits:
        options = self.options
        memory = options.child_memory_mb or max(8192, physical_memory_mb() // 2)
        return ChildLimits(memory_mb=memory, processes=options.child_processes,
                           open_files=options.child_open_files, file_mb=options.child_file_mb)

    def confinement(self, cache: str, args: Any) -> Confinement | None:
        """What a child may touch: its cache writable; the on-disk reference outputs hidden;
        the task's own files visible wherever they are."""
        if self.options.confinement == "none":
            return None
        hidden = [self.options.reference_cache_dir] if self.options.reference_cache_dir else []
        visible: list[str] = []
        task = (args.get("task") if isinstance(args, dict) else None) or {}
        extra = task.get("extra") if isinstance(task.get("extra"), dict) else {}
        # the reference, the baseline, and the files a suite names in ``extra`` (a task file,
        # a performance script): public task data, wherever the user keeps it
        for path in [task.get("reference"), task.get("timing_baseline"), *extra.values()]:
            if isinstance(path, str) and os.path.isabs(path) and os.path.isfile(path):
                visible.append(os.path.dirname(path))
        # the project's own packages too: an editable checkout under the temporary folder or
        # the home directory (both hidden from children) is imported from there
        return Confinement(writable=[cache], hidden=hidden,
                           visible=visible + list(self.options.extra_pythonpath) + list(package_folders()))

    def sys_path(self) -> list[str]:
        extra = [os.path.abspath(p) for p in self.options.extra_pythonpath]
        return extra + [p for p in sys.path if p not in extra]

    def run(self, job: str, args: Any, env: dict[str, str | None], *, timeout: float, cache: str,
            on_message: Any = None, slot: Slot | None = None, wrapper: Wrapper | None = None,
            output_limit: int = 0) -> SandboxResult:
        """Run ``child_jobs.<job>`` (or a full ``module:function``) in a fresh sandboxed child.

        With ``slot``, a spare child of that slot (started earlier, nothing of any
        job in it yet) takes the job when one is waiting, and another is started.
        ``wrapper``: a profiling tool starts the child (never a spare; see the sandbox's
        ``Wrapper``). ``output_limit``: the bytes of its output kept (0: the options').
        """
        entry = job if ":" in job else f"{CHILD}:{job}"
        child_env = dict(env)
        cache_path = cache if os.path.isabs(cache) else self.cache_dir(cache)
        child_env["TRITON_CACHE_DIR"] = cache_path
        child_env["TRITON_CACHE_AUTOTUNING"] = "1" if self.options.autotune_cache else None
        spare, owner = self._take_spare(slot) if wrapper is None else (None, None)
        try:
            return self._run(entry, args, child_env, timeout, on_message, spare, self.confinement(cache_path, args),
                             wrapper, output_limit or self.options.output_limit_kb * 1024)
        finally:
            if wrapper is None and slot is not None and self.use_spares():
                self._replenish(slot)  # after the job, so the new spare does not compete with it
                if owner is not None and owner is not slot:
                    self._replenish(owner)

    def _run(self, entry: str, args: Any, child_env: dict[str, str | None], timeout: float, on_message: Any,
             spare: SpareChild | None, confine: Confinement | None, wrapper: Wrapper | None,
             output_limit: int) -> SandboxResult:
        gpu = self.runtime is not None and self.runtime.mode == "gpu"
        return run_sandboxed(
            entry,
            args,
            timeout_s=timeout,
            env=child_env,
            sys_path=self.sys_path(),
            output_limit=output_limit,
            result_limit=self.options.max_result_mb * 1024 * 1024,
            on_message=on_message,
            isolate=self.runtime.isolate if self.runtime is not None else False,
            spare=spare,
            job_env={k: str(v) for k, v in child_env.items()
                     if k in ("TRITON_CACHE_DIR", "TRITON_CACHE_AUTOTUNING") and v is not None},
            limits=self.limits(),
            confine=confine,
            env_allow=tuple(self.options.child_env_allow),
            preload=PRELOAD if gpu else (),
            wrapper=wrapper,
        )

    def for_task(self, task: Task, slot: Slot) -> Any:
        """``run_child(job, args)`` for trusted jobs of ``task`` (the harness compare hook)."""

        def run_child(job: str, args: dict[str, Any]) -> SandboxResult:
            return self.run(job, {"task": task_payload(task), **args}, slot.env,
                            timeout=self.options.reference_timeout_s, cache="reference", slot=slot)

        return run_child


def task_payload(task: Task) -> dict[str, Any]:
    """The task as a child receives it, with file paths made absolute."""
    data = task.to_dict()
    for key in ("reference", "timing_baseline"):
        path = data.get(key)
        if path and not os.path.isabs(path) and os.path.exists(path):
            data[key] = os.path.abspath(path)
    return data
