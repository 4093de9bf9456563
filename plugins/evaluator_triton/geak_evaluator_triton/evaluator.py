"""The ``triton`` evaluator: the judge's side of every evaluation.

Nothing here runs candidate code. Per candidate the judge

1. checks the source statically (syntax, a kernel exists, no forbidden constructs);
2. obtains the reference outputs for the task from a *reference* child (cached
   per task, mode, device and seeds);
3. runs a *candidate* child that imports the code under guards and only after
   the import learns which seeds and cases to run; it streams outputs back;
4. compares every output here (or, for harnesses that override ``compare``,
   in a trusted *compare* child that never sees candidate code);
5. on a GPU, times correct candidates against the reference in a *timing*
   child and verifies the timed outputs here.

Children are pinned to one device each; ``evaluate_many`` runs one job per
device (per worker under the interpreter) and yields results as they finish.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import secrets
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

from geak_core.components import EvalJob, HardwareProfile
from geak_core.model import Candidate, EvalResult, ShapeResult, aggregate_speedups
from geak_core.sandbox import SandboxResult, namespaces_available, run_sandboxed
from geak_core.tasks import Case, Task

from geak_evaluator_triton.compare import compare_values
from geak_evaluator_triton.devices import Runtime, Slot, gpu_visible, visible_devices
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.performance import (
    INTERPRETER_NOTE,
    match_profile,
    shape_result,
    shape_stub,
)
from geak_evaluator_triton.references import DiskCache, ReferenceRun, nbytes_of
from geak_evaluator_triton.static_checks import check_source
from geak_evaluator_triton.verdict import (
    Verdict,
    describe_exception,
    trim_traceback,
    where,
)

CHILD = "geak_evaluator_triton.child"



class JudgeError(Exception):
    """The judge could not judge (bad setup, failing reference): not the candidate's fault."""


class TritonEvaluator:
    """Judges candidates in sandboxed children; never raises out of ``evaluate``."""

    def __init__(self, options: TritonEvaluatorOptions | None = None) -> None:
        self.options = options or TritonEvaluatorOptions()
        problems = self.options.validate()
        if problems:
            raise ValueError("invalid triton evaluator options: " + "; ".join(problems))
        self._lock = threading.Lock()
        self._runtime: Runtime | None = None
        self._runtime_error: str | None = None
        self._slots: queue.Queue[Slot] = queue.Queue()
        self._refs: OrderedDict[str, ReferenceRun] = OrderedDict()
        self._ref_locks: dict[str, threading.Lock] = {}
        self._secret_seeds = [secrets.randbelow(2**31 - 1) for _ in range(self.options.secret_seeds)]
        self._hardware: HardwareProfile | None = None
        self._hardware_resolved = False
        self._closed = False
        root = self.options.reference_cache_dir
        self._disk = DiskCache(root) if root else None

    # -- configuration ------------------------------------------------------

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        """The resolved hardware profile (peaks for roofline figures)."""
        self._hardware = profile
        self._hardware_resolved = profile is not None

    @property
    def hardware(self) -> HardwareProfile | None:
        return self._hardware

    def runtime(self) -> Runtime:
        """Resolve mode, device and worker slots (once)."""
        with self._lock:
            if self._runtime is not None:
                return self._runtime
            if self._runtime_error is not None:
                raise JudgeError(self._runtime_error)
            try:
                self._runtime = self._resolve_runtime()
                self._runtime.isolate = self._resolve_isolation(self._runtime.mode)
            except JudgeError as exc:
                self._runtime_error = str(exc)
                raise
            for slot in self._runtime.slots:
                self._slots.put(slot)
            return self._runtime

    def _resolve_runtime(self) -> Runtime:
        mode = self.options.mode
        if mode == "auto":
            mode = "gpu" if gpu_visible() else "interpreter"
        case_set = self.options.case_set
        if case_set == "auto":
            case_set = "full" if mode == "gpu" else "small"
        if mode == "interpreter":
            workers = self.options.workers or min(4, os.cpu_count() or 1)
            env = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            slots = [Slot(i, dict(env), f"cpu worker {i}") for i in range(workers)]
            return Runtime("interpreter", case_set, "cpu (Triton interpreter)", None, slots)
        probe = self._probe({"TRITON_INTERPRET": None})
        if not probe.get("gpu") or not probe.get("devices"):
            raise JudgeError("evaluator mode 'gpu' was requested but no GPU is visible to torch")
        vendor = "amd" if probe.get("hip") else "nvidia"
        visible = visible_devices(vendor, len(probe["devices"]))
        count = len(visible) if not self.options.workers else min(self.options.workers, len(visible))
        slots = []
        for i in range(count):
            env: dict[str, str | None] = {"TRITON_INTERPRET": None}
            if vendor == "amd":
                env.update({"HIP_VISIBLE_DEVICES": visible[i], "CUDA_VISIBLE_DEVICES": None})
            else:
                env.update({"CUDA_VISIBLE_DEVICES": visible[i]})
            slots.append(Slot(i, env, f"GPU {visible[i]}"))
        name = probe["devices"][0]["name"]
        return Runtime("gpu", case_set, name, vendor, slots, probe)

    def _resolve_isolation(self, mode: str) -> bool:
        choice = self.options.isolation
        if choice == "none":
            return False
        available = namespaces_available()
        if choice == "namespaces" and not available:
            raise JudgeError("isolation 'namespaces' was requested but 'unshare --user --pid --net' "
                             "does not work here (util-linux missing or user namespaces disabled)")
        return available and (choice == "namespaces" or mode == "interpreter")

    def _probe(self, env: dict[str, str | None]) -> dict[str, Any]:
        result = self._sandbox(f"{CHILD}:probe", {}, env, timeout=120.0, cache="reference")
        if not result.completed:
            raise JudgeError("could not probe the device: " + result.describe_exit()
                             + _tail(result.stderr))
        return result.returned

    def resolve_hardware(self) -> HardwareProfile | None:
        """The profile set, named in the options, or matched to the device name."""
        if self._hardware_resolved:
            return self._hardware
        self._hardware_resolved = True
        runtime = self.runtime()
        name = self.options.hardware
        from geak_core.plugins import get_plugin_manager

        manager = get_plugin_manager()
        specs = manager.components("hardware_profile")
        if name and name != "auto":
            try:
                self._hardware = manager.build("hardware_profile", name)
            except Exception as exc:
                raise JudgeError(f"hardware profile {name!r}: {exc}") from exc
            return self._hardware
        if runtime.mode != "gpu":
            return None
        device = runtime.probe["devices"][0]
        profiles = []
        for spec in specs.values():
            try:
                profiles.append(spec.build(None))
            except Exception:
                continue
        self._hardware = match_profile(profiles, device["name"], device.get("arch", ""))
        return self._hardware

    # -- sandbox plumbing -----------------------------------------------------

    def _cache_dir(self, role: str) -> str:
        root = self.options.triton_cache_dir or os.path.join(
            os.path.expanduser("~"), ".cache", "geak", "triton"
        )
        path = os.path.join(root, role)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def _sys_path(self) -> list[str]:
        extra = [os.path.abspath(p) for p in self.options.extra_pythonpath]
        return extra + [p for p in sys.path if p not in extra]

    def _sandbox(
        self, entry: str, args: Any, env: dict[str, str | None], *, timeout: float, cache: str,
        on_message: Any = None,
    ) -> SandboxResult:
        child_env = dict(env)
        child_env["TRITON_CACHE_DIR"] = self._cache_dir(cache)
        return run_sandboxed(
            entry,
            args,
            timeout_s=timeout,
            env=child_env,
            sys_path=self._sys_path(),
            output_limit=self.options.output_limit_kb * 1024,
            result_limit=self.options.max_result_mb * 1024 * 1024,
            on_message=on_message,
            isolate=self._runtime.isolate if self._runtime is not None else False,
        )

    # -- reference ------------------------------------------------------------

    def seeds_for(self, task: Task) -> list[int]:
        fixed = list(self.options.seeds) if self.options.seeds else list(task.seeds)
        return fixed + [s for s in self._secret_seeds if s not in fixed]

    def _task_payload(self, task: Task) -> dict[str, Any]:
        data = task.to_dict()
        ref = task.reference
        if ref and not os.path.isabs(ref) and os.path.exists(ref):
            data["reference"] = os.path.abspath(ref)
        return data

    def _reference_key(self, task: Task, runtime: Runtime) -> str:
        payload = self._task_payload(task)
        content = ""
        if payload.get("reference") and os.path.isfile(payload["reference"]):
            with open(payload["reference"], "rb") as handle:
                content = hashlib.sha256(handle.read()).hexdigest()
        blob = json.dumps(
            [payload, content, runtime.mode, runtime.device_name, runtime.case_set,
             self.options.check_outliers, self.options.heavy_case_mb],
            sort_keys=True, default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def reference(self, task: Task, slot: Slot | None = None) -> ReferenceRun:
        """The reference outputs of ``task`` (cached); raises JudgeError if the reference fails."""
        runtime = self.runtime()
        key = self._reference_key(task, runtime)
        with self._lock:
            lock = self._ref_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._refs:
                    self._refs.move_to_end(key)
                    return self._refs[key]
            own_slot = slot is None
            if own_slot:
                slot = self._slots.get()
            try:
                run = self._compute_reference(task, runtime, slot, key)  # type: ignore[arg-type]
            finally:
                if own_slot:
                    self._slots.put(slot)  # type: ignore[arg-type]
            with self._lock:
                self._refs[key] = run
                self._evict()
            return run

    def _evict(self) -> None:
        limit = self.options.reference_cache_mb * 1024 * 1024
        while len(self._refs) > 1 and sum(r.nbytes for r in self._refs.values()) > limit:
            self._refs.popitem(last=False)

    def _compute_reference(self, task: Task, runtime: Runtime, slot: Slot, key: str) -> ReferenceRun:
        seeds = self.seeds_for(task)
        fixed = [s for s in seeds if s not in self._secret_seeds]
        cached = self._disk.load(key, fixed) if self._disk else {}
        missing = [s for s in seeds if s not in cached.get("seeds", [])]
        run: ReferenceRun | None = None
        if missing or not cached:
            run = self._run_reference(task, runtime, slot, missing or seeds)
        if run is None:
            run = cached["run"]
        elif cached:
            run.outputs.update(cached["run"].outputs)
        run.seeds = seeds
        run.heavy_bytes = self.options.heavy_case_mb * 2**20
        run.nbytes = nbytes_of(list(run.outputs.values()))
        if self._disk:
            self._disk.store(key, run, fixed)
        return run

    def _run_reference(self, task: Task, runtime: Runtime, slot: Slot, seeds: list[int], oracle: bool = False) -> ReferenceRun:
        started = time.monotonic()
        args = {
            "task": self._task_payload(task),
            "case_set": runtime.case_set,
            "seeds": seeds,
            "all_seeds": self.seeds_for(task),
            "heavy_bytes": self.options.heavy_case_mb * 2**20,
            "outliers": self.options.check_outliers,
            "oracle": oracle,
        }
        result = self._sandbox(f"{CHILD}:reference", args, slot.env,
                               timeout=self.options.reference_timeout_s, cache="reference")
        table = None
        outputs: dict[tuple[str, str, int], Any] = {}
        oracles: dict[tuple[str, str, int], Any] = {}
        weak: list[str] = []
        for message in result.messages:
            if not isinstance(message, dict):
                continue
            kind = message.get("kind")
            if kind == "cases":
                table = message
            elif kind == "run":
                index = (message["stage"], message["case"], message["seed"])
                outputs[index] = message["outputs"]
                weak += [w for w in message.get("weak", []) if w not in weak]
                if "oracle" in message:
                    oracles[index] = message["oracle"]
                elif "oracle_error" in message:
                    oracles[index] = {"$oracle_error": message["oracle_error"]}
            elif kind in ("setup_error", "import_error", "error"):
                location = f" at {where(message)}" if kind == "error" else ""
                raise JudgeError(
                    f"the reference of {task.key} failed{location}: {describe_exception(message)}\n"
                    + (trim_traceback(message.get("error")) or "")
                )
        if table is None or not result.completed:
            raise JudgeError(
                f"the reference of {task.key} did not finish: {result.describe_exit()}"
                + _tail(result.stderr)
            )
        return ReferenceRun(
            cases=[Case.from_dict(c) for c in table["cases"]],
            skipped=table["skipped"],
            stage2_skipped=table["stage2_skipped"],
            custom_compare=bool(table["custom_compare"]),
            seeds=seeds,
            heavy_bytes=self.options.heavy_case_mb * 2**20,
            outputs=outputs,
            oracle=oracles,
            reference_file=table.get("reference_file", ""),
            weak=weak,
            wall_s=time.monotonic() - started,
        )

    # -- evaluation -----------------------------------------------------------

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        return self._evaluate(task, candidate, slot=None)

    def evaluate_many(self, jobs: Iterable[EvalJob]) -> Iterator[tuple[EvalJob, EvalResult]]:
        """Judge ``jobs`` in parallel (one per device or worker), yielding as each finishes."""
        jobs = list(jobs)
        if not jobs:
            return
        try:
            workers = len(self.runtime().slots)
        except JudgeError:
            workers = 1
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="geak-judge") as pool:
            pending = {pool.submit(self.evaluate, job.task, job.candidate): job for job in jobs}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    yield job, future.result()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            self._refs.clear()

    def _evaluate(self, task: Task, candidate: Candidate, slot: Slot | None) -> EvalResult:
        started = time.monotonic()
        result = EvalResult(task_id=task.id, candidate_id=candidate.id,
                            speedup_method=self.options.speedup_method)
        try:
            runtime = self.runtime()
            result.mode = runtime.mode
            result.device = runtime.device_name
            finding = check_source(candidate.code, forbid_constructs=self.options.static_checks)
            if finding is not None:
                result.failed_stage = finding.stage
                result.reason = finding.reason
                self._no_performance(result, runtime, "the candidate was rejected before running")
                return result
            own_slot = slot is None
            if own_slot:
                slot = self._slots.get()
            try:
                self._judge(task, candidate, runtime, slot, result)  # type: ignore[arg-type]
            finally:
                if own_slot:
                    self._slots.put(slot)  # type: ignore[arg-type]
        except JudgeError as exc:
            result.flags.append("judge_error")
            result.reason = f"judge error: {str(exc).splitlines()[0]}"
            result.error = trim_traceback(str(exc))
        except Exception as exc:  # never let the judge's own bugs escape
            result.flags.append("judge_error")
            result.reason = f"internal judge error: {type(exc).__name__}: {exc}"
            result.error = trim_traceback(traceback.format_exc())
        finally:
            result.wall_s = time.monotonic() - started
        return result

    def _no_performance(self, result: EvalResult, runtime: Runtime, why: str) -> None:
        result.performance_measured = False
        result.performance_note = INTERPRETER_NOTE if runtime.mode == "interpreter" else f"not measured: {why}"

    def _judge(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot, result: EvalResult) -> None:
        mark = time.monotonic()
        ref = self.reference(task, slot)
        result.phases["reference"] = round(time.monotonic() - mark, 3)
        result.skipped = list(ref.skipped)
        if self.options.check_outliers:
            result.skipped += [{"case": s["case"], "stage": "stage2", "reason": s["reason"]}
                               for s in ref.stage2_skipped]
        if not ref.runnable:
            result.flags.append("skipped")
            reasons = sorted({s["reason"] for s in ref.skipped})
            result.reason = "skipped: no case of this task can run here (" + "; ".join(reasons) + ")"
            self._no_performance(result, runtime, "the task was skipped")
            return
        mark = time.monotonic()
        sandbox = self._run_candidate(task, candidate, runtime, slot, ref)
        verdict, runs = self._read_candidate(task, ref, sandbox)
        if verdict.ran:
            self._compare_runs(task, ref, runs, verdict, slot)
        result.phases["candidate"] = round(time.monotonic() - mark, 3)
        first = verdict.first
        result.call_ok = verdict.ran
        result.correct = verdict.ran and first is None
        if ref.weak:
            verdict.flag("weak_test")
        result.flags.extend(f for f in verdict.flags if f not in result.flags)
        if first is not None:
            result.failed_stage = first.stage
            result.reason = verdict.reason()
            result.error = trim_traceback(first.error)
            result.mismatches = first.mismatches
        if runtime.mode != "gpu":
            self._no_performance(result, runtime, "")
            result.shapes = [shape_stub(c) for c in ref.runnable if c.timed]
            return
        if not result.correct:
            self._no_performance(result, runtime, "only correct candidates are timed")
            return
        mark = time.monotonic()
        self._time(task, candidate, runtime, slot, ref, result)
        result.phases["timing"] = round(time.monotonic() - mark, 3)

    # -- candidate child ------------------------------------------------------

    def _run_candidate(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot,
                       ref: ReferenceRun) -> SandboxResult:
        stage2 = ref.stage2_cases(self.options.check_outliers)
        plan = {
            "seeds": ref.seeds,
            "stage1": [c.name for c in ref.runnable],
            "stage2": stage2,
            "case_seeds": {
                "stage1": {c.name: ref.plan_seeds("stage1", c) for c in ref.runnable},
                "stage2": {c.name: ref.plan_seeds("stage2", c) for c in ref.runnable if c.name in stage2},
            },
            "no_rerun": [c.name for c in ref.runnable if ref.heavy(c)],
            "determinism": self.options.check_determinism,
        }

        cases = {c.name: c for c in ref.cases}

        def on_message(message: Any, replier: Any) -> Any:
            if not isinstance(message, dict):
                return None
            if message.get("kind") == "imported":
                if message.get("contract") or message.get("violations"):
                    replier.send({"abort": True})
                else:
                    replier.send(plan)
            elif message.get("kind") == "run" and not ref.custom_compare:
                # Compare as the frames arrive and keep only the findings: a GPU task's
                # outputs would otherwise pile up in memory until the child ends.
                digest = {k: v for k, v in message.items() if k not in ("outputs", "rerun")}
                try:
                    digest["compared"] = self._compare_frame(task, ref, cases, message, None)
                except JudgeError as exc:
                    digest["compared"] = {"judge_error": str(exc)}
                return digest
            return None

        args = {"task": self._task_payload(task), "code": candidate.code, "case_set": runtime.case_set}
        return self._sandbox(f"{CHILD}:candidate", args, slot.env, timeout=self.options.timeout_s,
                             cache="candidate", on_message=on_message)

    def _read_candidate(self, task: Task, ref: ReferenceRun, sandbox: SandboxResult) -> tuple[Verdict, list[dict[str, Any]]]:
        verdict = Verdict()
        runs: list[dict[str, Any]] = []
        imported = aborted = failed_run = False
        current: dict[str, Any] | None = None
        for message in sandbox.messages:
            if not isinstance(message, dict):
                continue
            kind = message.get("kind")
            if kind == "setup_error":
                raise JudgeError(f"the harness of {task.key} failed in the candidate's process: "
                                 f"{describe_exception(message)}\n{message.get('error', '')}")
            if kind == "import_error":
                verdict.fail("import", f"importing the candidate failed: {describe_exception(message)}",
                             message.get("error"))
            elif kind == "imported":
                imported = True
                aborted = bool(message.get("contract") or message.get("violations"))
                for problem in message.get("contract", []):
                    verdict.fail("contract", problem)
                for problem in message.get("violations", []):
                    verdict.fail("anticheat", f"at import, the candidate {problem}")
            elif kind == "start":
                current = message
            elif kind == "error":
                failed_run = True
                rerun = " (second run of the determinism check)" if message.get("rerun") else ""
                verdict.fail("run", f"{where(message)}{rerun} raised {describe_exception(message)}",
                             message.get("error"))
            elif kind == "run":
                current = None
                runs.append(message)
                self._check_guards(task, message, message.get("checks", {}), verdict)
                if "rerun_checks" in message:
                    self._check_guards(task, message, message["rerun_checks"], verdict)
        stage2 = set(ref.stage2_cases(self.options.check_outliers))
        expected = sum(len(ref.plan_seeds("stage1", c)) for c in ref.runnable) + sum(
            len(ref.plan_seeds("stage2", c)) for c in ref.runnable if c.name in stage2
        )
        complete = (imported and not aborted and not failed_run and sandbox.completed
                    and len(runs) >= expected)
        if not imported and not verdict.has("import"):
            verdict.fail("import", f"the candidate's process {sandbox.describe_exit()} while importing it",
                         _tail(sandbox.stderr, 4000) or None)
        elif imported and not aborted and not failed_run and not complete:
            location = f" during {where(current)}" if current else ""
            verdict.fail("run", f"the candidate's process {sandbox.describe_exit()}{location}",
                         _tail(sandbox.stderr, 4000) or None)
        verdict.ran = complete
        return verdict, runs

    def _check_guards(self, task: Task, frame: dict[str, Any], checks: dict[str, Any], verdict: Verdict) -> None:
        """Guard findings of one run; each kind of finding is reported once, where first seen."""
        at = where(frame)
        for problem in checks.get("violations", []):
            verdict.fail("anticheat", f"during {at}, the candidate {problem}", key=f"violation:{problem}")
        mutated = checks.get("mutated", [])
        if mutated:
            verdict.fail("anticheat", f"during {at}, the candidate modified its input(s) "
                         f"{', '.join(mutated)} (inputs must stay unchanged)", key="mutated")
        compute = checks.get("compute", [])
        if compute and task.forbid_torch_compute:
            verdict.fail("anticheat", f"during {at}, the entry point computed with torch/numpy instead "
                         f"of a Triton kernel ({', '.join(compute[:3])})", key="compute")
        launches = checks.get("launches", {})
        if launches.get("other"):
            verdict.fail("anticheat", f"during {at}, the entry point launched kernels that are not the "
                         "candidate's own: " + ", ".join(launches["other"][:3]), key="foreign")
        if launches.get("candidate", 0) == 0:
            verdict.fail("anticheat", f"during {at}, no Triton kernel defined in the candidate was "
                         "launched", key="no_launch")

    # -- comparison -------------------------------------------------------------

    def _compare_frame(self, task: Task, ref: ReferenceRun, cases: dict[str, Case], frame: dict[str, Any],
                       custom: dict[str, Any] | None) -> dict[str, Any]:
        """Findings of one run: determinism (run vs rerun) and outputs vs the reference."""
        case = cases[frame["case"]]
        overrides = {**task.tolerances, **case.tolerances}
        found: dict[str, Any] = {}
        if "rerun" in frame:
            found["rerun_diffs"] = compare_values(frame["outputs"], frame["rerun"], overrides, "output")
            found["rerun_bitwise"] = _bitwise_equal(frame["outputs"], frame["rerun"])
        expected = ref.outputs.get((frame["stage"], frame["case"], frame["seed"]))
        if expected is None:
            raise JudgeError(f"no reference output for {where(frame)}")
        found["mismatches"] = self._compare_outputs(expected, frame["outputs"], overrides, custom)
        return found

    def _compare_runs(self, task: Task, ref: ReferenceRun, runs: list[dict[str, Any]], verdict: Verdict,
                      slot: Slot) -> None:
        cases = {c.name: c for c in ref.cases}
        custom: dict[int, Any] = {}
        if ref.custom_compare:
            custom = self._custom_compare(task, ref, runs, cases, slot)
        for index, frame in enumerate(runs):
            found = frame.get("compared")
            if found is None:
                found = self._compare_frame(task, ref, cases, frame, custom.get(index))
            if "judge_error" in found:
                raise JudgeError(found["judge_error"])
            at = where(frame)
            diffs = found.get("rerun_diffs")
            if diffs:
                verdict.fail("anticheat", f"{at}: results differ between two runs on the same "
                             f"inputs: {diffs[0]['message']}", mismatches=diffs, key="nondeterministic")
            elif diffs is not None and not found.get("rerun_bitwise"):
                verdict.flag("nondeterministic_within_tolerance")
            mismatches = found["mismatches"]
            if mismatches:
                stage = frame["stage"]
                if not verdict.has(stage):
                    detail = mismatches[0]["message"]
                    verdict.fail(stage, f"{at}: {detail}" + (
                        f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""),
                        mismatches=[{**m, "stage": stage, "case": frame["case"], "seed": frame["seed"]}
                                    for m in mismatches])

    def _compare_outputs(self, expected: Any, actual: Any, overrides: dict[str, Any],
                         custom: dict[str, Any] | None) -> list[dict[str, Any]]:
        if isinstance(expected, dict) and isinstance(actual, dict) and custom:
            out = []
            missing = [k for k in expected if k not in actual]
            if missing:
                return compare_values(expected, actual, overrides, "outputs")
            for name, value in expected.items():
                verdict = custom.get(name)
                if verdict is None:
                    out += compare_values(value, actual[name], overrides, name)
                elif verdict:
                    out.append({"path": name, "problem": "custom", "message": f"{name}: {verdict}"})
            return out
        if isinstance(expected, dict) and isinstance(actual, dict) and set(expected) == set(actual):
            out = []
            for name in expected:
                out += compare_values(expected[name], actual[name], overrides, name)
            return out
        return compare_values(expected, actual, overrides, "outputs")

    def _custom_compare(self, task: Task, ref: ReferenceRun, runs: list[dict[str, Any]],
                        cases: dict[str, Case], slot: Slot) -> dict[int, dict[str, Any]]:
        """Run the harness's own compare hook in a trusted child (no candidate code there)."""
        items, owners = [], []
        for index, frame in enumerate(runs):
            expected = ref.outputs.get((frame["stage"], frame["case"], frame["seed"]))
            actual = frame["outputs"]
            if not isinstance(expected, dict) or not isinstance(actual, dict):
                continue
            for name, value in expected.items():
                if name in actual:
                    items.append({"case": cases[frame["case"]].to_dict(), "name": name,
                                  "expected": value, "actual": actual[name]})
                    owners.append((index, name))
        if not items:
            return {}
        result = self._sandbox(f"{CHILD}:compare", {"task": self._task_payload(task), "items": items},
                               slot.env, timeout=self.options.reference_timeout_s, cache="reference")
        verdicts = result.returned
        if not result.completed or not isinstance(verdicts, list) or len(verdicts) != len(items):
            raise JudgeError(f"the harness compare hook of {task.key} failed: {result.describe_exit()}"
                             + _tail(result.stderr))
        out: dict[int, dict[str, Any]] = {}
        for (index, name), verdict in zip(owners, verdicts, strict=True):
            out.setdefault(index, {})[name] = verdict
        return out

    # -- timing -----------------------------------------------------------------

    def _time(self, task: Task, candidate: Candidate, runtime: Runtime, slot: Slot, ref: ReferenceRun,
              result: EvalResult) -> None:
        timed = [c for c in ref.runnable if c.timed]
        if not timed:
            self._no_performance(result, runtime, "the task marks no case as timed")
            return
        profile = self.resolve_hardware()
        cand_seed = ref.seeds[-1]
        ref_seed = ref.seeds[0] if len(ref.seeds) > 1 else ref.seeds[-1]
        flush = 256 * 1024 * 1024
        if profile is not None:
            cache_mib = profile.l2_cache_mib + profile.last_level_cache_mib
            flush = max(flush, int(2 * cache_mib * 1024 * 1024))
        args = {
            "task": self._task_payload(task),
            "code": candidate.code,
            "case_set": runtime.case_set,
            "cases": [c.name for c in timed],
            "reference_seed": ref_seed,
            "candidate_cache": self._cache_dir("candidate"),
            "timing": {
                "warmup_ms": self.options.warmup_ms,
                "rep_ms": self.options.rep_ms,
                "repetitions": self.options.repetitions,
                "min_repetitions": self.options.min_repetitions,
                "max_repetitions": self.options.max_repetitions,
                "l2_flush": self.options.l2_flush,
                "queue_ahead_us": self.options.queue_ahead_us,
                "flush_bytes": flush,
            },
        }

        def on_message(message: Any, replier: Any) -> None:
            if isinstance(message, dict) and message.get("kind") == "imported":
                if message.get("contract") or message.get("violations"):
                    replier.send({"abort": True})
                else:
                    replier.send({"seed": cand_seed})

        sandbox = self._sandbox("geak_evaluator_triton.gputiming:time_candidate", args, slot.env,
                                timeout=self.options.timeout_s, cache="reference", on_message=on_message)
        cases = {c.name: c for c in ref.cases}
        shapes: list[ShapeResult] = []
        verdict = Verdict()
        timed_runs: list[dict[str, Any]] = []
        for message in sandbox.messages:
            if not isinstance(message, dict):
                continue
            kind = message.get("kind")
            if kind in ("setup_error", "import_error", "error"):
                verdict.fail("timing", f"timing failed: {describe_exception(message)}", message.get("error"))
            elif kind == "imported":
                for problem in message.get("contract", []) + message.get("violations", []):
                    verdict.fail("anticheat", f"in the timing process, the candidate {problem}")
            elif kind == "timing":
                case = cases[message["case"]]
                for problem in message.get("violations", []):
                    verdict.fail("anticheat", f"while being timed on case {case.name!r}, the candidate "
                                 f"{problem}", key=f"violation:{problem}")
                if message.get("zero_launch_calls"):
                    verdict.fail("anticheat", f"{message['zero_launch_calls']} timed call(s) of case "
                                 f"{case.name!r} launched none of the candidate's kernels", key="no_launch")
                timed_runs.append({"stage": "stage1", "case": case.name, "seed": message["seed"],
                                   "outputs": message.get("outputs")})
                shapes.append(shape_result(case, message, profile, verdict))
        # The outputs of the last timed call must still be right (seed B, checked here).
        custom = self._custom_compare(task, ref, timed_runs, cases, slot) if ref.custom_compare else {}
        for index, run in enumerate(timed_runs):
            case = cases[run["case"]]
            expected = ref.outputs.get(("stage1", case.name, run["seed"]))
            overrides = {**task.tolerances, **case.tolerances}
            diffs = self._compare_outputs(expected, run["outputs"], overrides, custom.get(index))
            if diffs:
                verdict.fail("anticheat", f"the outputs of the timed runs of case {case.name!r} differ "
                             f"from the reference: {diffs[0]['message']}", mismatches=diffs,
                             key="timed_outputs")
        if not verdict.failures and (not sandbox.completed or len(shapes) < len(timed)):
            verdict.fail("timing", f"the timing process {sandbox.describe_exit()}", _tail(sandbox.stderr, 4000))
        for flag in verdict.flags:
            if flag not in result.flags:
                result.flags.append(flag)
        first = verdict.first
        if first is not None:
            if first.stage == "anticheat":
                result.correct = False
            result.failed_stage = first.stage
            result.reason = verdict.reason()
            result.error = trim_traceback(first.error)
            result.mismatches = first.mismatches
            result.performance_measured = False
            result.performance_note = f"not measured: {first.reason}"
            result.shapes = shapes
            return
        result.shapes = shapes
        result.performance_measured = True
        result.speedup_sum, result.speedup_geomean = aggregate_speedups(shapes)
        result.speedup = result.speedup_sum if self.options.speedup_method == "sum" else result.speedup_geomean
        fractions = [s.roofline_fraction for s in shapes if s.roofline_fraction is not None]
        result.roofline_fraction = sum(fractions) / len(fractions) if fractions else None
        note = "CUDA-event medians, reference and candidate interleaved"
        if profile is None:
            note += "; no hardware profile matched the device, so no roofline figures"
        result.performance_note = note
        if result.speedup is not None and result.speedup > self.options.suspicious_speedup:
            result.flags.append("suspicious_speedup")

    # -- suite authors' check ------------------------------------------------------

    def check_reference(self, task: Task) -> dict[str, Any]:
        """Reference vs the harness oracle, per run: what a suite's own tests assert."""
        runtime = self.runtime()
        slot = self._slots.get()
        try:
            run = self._run_reference(task, runtime, slot, self.seeds_for(task), oracle=True)
        finally:
            self._slots.put(slot)
        report: dict[str, Any] = {"task": task.key, "skipped": run.skipped, "problems": [], "checked": 0}
        cases = {c.name: c for c in run.cases}
        for index, oracle in run.oracle.items():
            if isinstance(oracle, dict) and "$oracle_error" in oracle:
                report["problems"].append(f"{index}: the oracle raised:\n{oracle['$oracle_error']}")
                continue
            stage, name, seed = index
            case = cases[name]
            overrides = {**task.tolerances, **case.tolerances}
            diffs = self._compare_outputs(oracle, run.outputs[index], overrides, None)
            report["checked"] += 1
            for diff in diffs:
                report["problems"].append(f"{stage} case {name!r} seed {seed}: {diff['message']}")
        return report


def _bitwise_equal(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.numel() == 0:
            return True
        return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_bitwise_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_bitwise_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _tail(text: str, limit: int = 2000) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    return "\n" + (text if len(text) <= limit else "[...]" + text[-limit:])


