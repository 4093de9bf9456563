"""The judge's child-process jobs (entry points for ``geak_core.kit.sandbox``).

``probe``      what the device is (no harness, no candidate).
``reference``  runs the task's reference over every case, seed and stage and
               streams the outputs back. Never sees candidate code.
``candidate``  imports the candidate under guards, tells the judge it is
               ready, and only then receives the seeds and cases to run;
               streams outputs and guard findings back. Never sees expected
               outputs. On a GPU, once every run is done and the judge has
               found them correct, the same process is timed (``timed_calls``),
               block by block against the baseline in the judge's trusted
               timer child (``baseline_timer``): one start-up and one compile
               serve both.
``compare``    runs a harness's own ``compare`` hook on outputs the judge
               sends (a trusted process: harness only, no candidate).
``profile``    runs a correct candidate, imported under the same guards, on one
               timed case for a profiling tool (``profile_run``); judges nothing.

Every job reports through the frames of ``protocol`` on the sandbox channel;
the judge decides every verdict.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from geak_evaluator_triton.autotuning import (
    AUTOTUNE_FRAMES,
    AUTOTUNERS,
    find_autotuners,
    planned_cases,
)
from geak_evaluator_triton.checks.input_mutation import mutated_inputs, snapshot_inputs
from geak_evaluator_triton.checks.launches import classify as classify_launches
from geak_evaluator_triton.checks.output_objects import record as record_outputs
from geak_evaluator_triton.checks.output_objects import settle as settle_outputs
from geak_evaluator_triton.checks.tampering import violations as process_violations
from geak_evaluator_triton.child_common import (
    error_frame,
    format_exception,
    is_interpreter,
    make_inputs,
    prefetch,
)
from geak_evaluator_triton.protocol import BlockChecks, ImportedFrame, LaunchCounts, RunChecks

CANDIDATE_MODULE = "geak_candidate"
REFERENCE_MODULE = "geak_reference"


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_task(data: dict[str, Any]) -> Any:
    from geak_core.api.tasks import Task

    return Task.from_dict(data)


def load_harness(task: Any) -> Any:
    module_name, _, class_name = task.harness.partition(":")
    if not module_name or not class_name:
        raise ValueError(f"task {task.key}: harness {task.harness!r} is not 'module:Class'")
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ValueError(f"task {task.key}: module {module_name!r} has no class {class_name!r}")
    return cls(task)


def resolve_reference(task: Any, harness: Any) -> str:
    path = task.reference
    if not path:
        raise ValueError(f"task {task.key} names no reference implementation")
    if os.path.isabs(path) and os.path.exists(path):
        return path
    module_file = sys.modules[type(harness).__module__].__file__ or ""
    for base in (os.path.dirname(os.path.abspath(module_file)), os.getcwd()):
        candidate = os.path.join(base, path)
        if os.path.exists(candidate):
            return os.path.abspath(candidate)
    raise FileNotFoundError(f"task {task.key}: reference file {path!r} not found")


def import_file(module_name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def setup_runtime() -> Any:
    """Import torch/triton, install the launch log, the autotuning frames (sent once a job
    gives them its channel) and the interpreter shim."""
    import torch  # noqa: F401
    import triton  # noqa: F401

    from geak_evaluator_triton.guards import LaunchLog, install_interpreter_autotune_shim

    if is_interpreter():
        install_interpreter_autotune_shim()
    AUTOTUNE_FRAMES.install()
    log = LaunchLog()
    log.install()
    return log


def synchronize() -> None:
    if not is_interpreter():
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# Requirements
# ---------------------------------------------------------------------------

_DEVICE: list[Any] = []


def unmet_requirement(name: str) -> str | None:
    """Why requirement ``name`` is not met here, or None (core's vocabulary and rules)."""
    from geak_core.api.tasks import DeviceInfo, Requirement
    from geak_core.api.tasks import unmet_requirement as core_unmet

    if not _DEVICE:
        _DEVICE.append(DeviceInfo.detect())
    return core_unmet(Requirement(name), _DEVICE[0])


def unmet(requirements: list[Any]) -> str | None:
    for req in requirements:
        why = unmet_requirement(req.name)
        if why:
            return f"{req.name}: {why}" + (f" ({req.reason})" if req.reason else "")
    return None


# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------


def probe(args: Any, channel: Any) -> dict[str, Any]:
    return device_facts(gpu=not is_interpreter())


def device_facts(gpu: bool) -> dict[str, Any]:
    """Library versions and, with ``gpu``, every device torch sees. Asks the driver for
    properties only: no CUDA context is created, so the judge's process may call it too."""
    import torch
    import triton

    info: dict[str, Any] = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "interpreter": not gpu,
        "gpu": False,
        "devices": [],
    }
    if gpu and torch.cuda.is_available():
        info["gpu"] = True
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            info["devices"].append({
                "name": props.name,
                "arch": getattr(props, "gcnArchName", "") or f"sm_{props.major}{props.minor}",
                "capability": [props.major, props.minor],
                "memory_gib": props.total_memory / 2**30,
                "multiprocessors": props.multi_processor_count,
            })
    return info


def _case_table(harness: Any, case_set: str) -> list[Any]:
    cases = list(harness.cases(case_set))
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"harness returned duplicate case names: {', '.join(duplicates)}")
    return cases


def reference(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Run the reference over every case; stream ``run`` frames; return the case table."""
    from geak_core.api.harness import Harness

    setup_runtime()
    task = load_task(args["task"])
    try:
        harness = load_harness(task)
        path = resolve_reference(task, harness)
        cases = _case_table(harness, args["case_set"])
    except Exception as exc:
        channel.send(error_frame("setup_error", exc))
        return {"ok": False}
    skipped, stage2_skipped, runnable = [], [], []
    task_unmet = unmet(task.requires)
    for case in cases:
        why = task_unmet or unmet(case.requires)
        if why:
            skipped.append({"case": case.name, "reason": why})
            continue
        runnable.append(case)
        if task.outliers is None:
            stage2_skipped.append({"case": case.name, "reason": task.outlier_note or "task defines no outlier stage"})
        elif not case.outliers:
            stage2_skipped.append({"case": case.name, "reason": case.note or "outliers disabled for this case"})
    channel.send({
        "kind": "cases",
        "cases": [c.to_dict() for c in cases],
        "skipped": skipped,
        "stage2_skipped": stage2_skipped,
        "custom_compare": type(harness).compare is not Harness.compare,
        "reference_file": path,
    })
    if not runnable:
        return {"ok": True}
    if args.get("gate") and not is_interpreter():
        COMPILE_RELEASE.install()  # a gated run lets the device go while it compiles and autotunes
    try:
        module = import_file(REFERENCE_MODULE, path)
    except Exception as exc:
        channel.send(error_frame("import_error", exc))
        return {"ok": False}
    stage2 = {c.name for c in runnable} - {s["case"] for s in stage2_skipped}
    from geak_evaluator_triton.reference_run import case_seeds

    all_seeds = args.get("all_seeds") or args["seeds"]
    heavy_bytes = float(args.get("heavy_bytes") or 0.0)
    checked = [c for c in runnable if c.checked]
    timing_seed = args.get("timing_seed")
    plan = {
        "seeds": args["seeds"],
        "case_seeds": {
            stage: {
                c.name: [s for s in case_seeds(c.bytes, stage, all_seeds, heavy_bytes) if s in args["seeds"]]
                for c in checked
            }
            for stage in ("stage1", "stage2")
        },
        "stage1": [c.name for c in checked],
        "stage2": [c.name for c in checked if c.name in stage2] if args.get("outliers", True) else [],
        "timing": [c.name for c in runnable if c.timed] if timing_seed is not None else [],
        "determinism": False,
        "oracle": bool(args.get("oracle")),
        "noise": bool(args.get("noise")),
        "gate": bool(args.get("gate")),  # wait for the judge's GO before each run
    }
    if timing_seed is not None:
        plan["case_seeds"]["timing"] = {name: [timing_seed] for name in plan["timing"]}
    # Its autotuners, for the budget (the judge allows time for their configs at each case),
    # then a frame whenever one tunes a new key.
    channel.send({"kind": AUTOTUNERS, "autotuners": find_autotuners(module), "cases": planned_cases(plan)})
    AUTOTUNE_FRAMES.channel = channel
    ok = run_plan(task, harness, module, {c.name: c for c in runnable}, plan, channel, guard=None)
    return {"ok": ok}


class GateAborted(RuntimeError):
    """The judge stopped the candidate while one of its kernels compiled."""


class CompileRelease:
    """In a gated run (a candidate's or a reference's), the device gate is let go while Triton compiles a
    kernel (CPU work: seconds a kernel, an autotuner's configs one after another) and asked
    for again before it runs: children compiling at once then wait for no one's device
    slot. Triton's ``jit_cache_hook`` says a compile is about to begin (a kernel not yet in
    this process's memory), ``jit_post_compile_hook`` that it is done; without those knobs
    (older Triton) the gate stays held, as before. Installed once per child, before the
    candidate is imported; active only inside ``during``."""

    def __init__(self) -> None:
        self.channel: Any = None
        self.where: dict[str, Any] = {}
        self.compiling = False
        self.waited_s = 0.0  # waiting for the gate again (the caller zeroes it per run)

    def install(self) -> bool:
        try:
            import triton

            runtime = triton.knobs.runtime
            if runtime.jit_cache_hook is not None or runtime.jit_post_compile_hook is not None:
                return False  # someone's own hooks: leave them be
            runtime.jit_cache_hook = self.before_compile
            runtime.jit_post_compile_hook = self.after_compile
            return True
        except AttributeError:
            return False

    @contextlib.contextmanager
    def during(self, channel: Any, where: dict[str, Any]) -> Iterator[None]:
        self.channel, self.where = channel, where
        try:
            yield
        finally:
            self.channel, self.compiling = None, False

    def before_compile(self, **_: Any) -> bool:
        if self.channel is not None and not self.compiling:
            self.compiling = True
            self.channel.send({"kind": "compiling", **self.where})
        return False  # compile as usual

    def after_compile(self, **_: Any) -> None:
        if self.channel is None or not self.compiling:
            return
        self.compiling = False
        began = time.perf_counter()
        self.channel.send({"kind": "start", **self.where, "resume": True})
        answer = self.channel.receive()
        self.waited_s += time.perf_counter() - began
        if isinstance(answer, dict) and answer.get("abort"):
            raise GateAborted("the judge stopped the candidate")


COMPILE_RELEASE = CompileRelease()


def run_plan(
    task: Any, harness: Any, module: Any, cases: dict[str, Any], plan: dict[str, Any], channel: Any,
    guard: Any, hide: dict[str, str] | None = None,
) -> bool:
    """Run every (stage, case, seed) of ``plan``; stop at the first exception.

    The reference's plan may add a ``timing`` stage (the timed cases on the
    secret timing seed, inputs as in stage 1); an exception there only costs
    that case its timing.
    """
    for stage in ("stage1", "stage2", "timing"):
        for name in plan.get(stage, []):
            case = cases[name]
            for seed in plan.get("case_seeds", {}).get(stage, {}).get(name, plan["seeds"]):
                where = {"stage": stage, "case": name, "seed": seed}
                prefetch(harness, case, seed)
                channel.send({"kind": "start", **where})
                if plan.get("gate") and channel.receive().get("abort"):
                    return False
                began = time.perf_counter()
                # A fresh context per run and per rerun: a generator's context manager is single-use.
                release = (functools.partial(COMPILE_RELEASE.during, channel, where)
                           if plan.get("gate") else contextlib.nullcontext)
                COMPILE_RELEASE.waited_s = 0.0
                try:
                    with release():
                        frame = _one_run(task, harness, module, case, seed, stage, guard)
                except Exception as exc:
                    channel.send(error_frame("error", exc, hide, **where))
                    if stage == "timing":
                        synchronize_quietly()
                        continue
                    return False
                weak = getattr(harness, "weak_result_reason", None) if guard is None else None
                if callable(weak) and isinstance(frame["outputs"], dict):
                    reasons = [weak(value) for value in frame["outputs"].values()]
                    frame["weak"] = [r for r in reasons if r]
                wants_noise = plan.get("noise") and stage in ("stage1", "stage2")
                if (plan.get("oracle") or wants_noise) and guard is None:
                    try:
                        inputs = make_inputs(harness, task, case, seed, stage)
                        oracle = harness.oracle(case, inputs)
                        if plan.get("oracle"):
                            frame["oracle"] = oracle
                        if wants_noise:
                            frame["noise"] = row_noise(frame["outputs"], oracle)
                        del inputs, oracle
                    except NotImplementedError:
                        frame["oracle_missing"] = True
                    except Exception as exc:
                        frame["oracle_error"] = format_exception(exc)
                seeds_here = plan.get("case_seeds", {}).get(stage, {}).get(name, plan["seeds"])
                if (plan.get("determinism") and stage == "stage1" and seed == seeds_here[0]
                        and name not in plan.get("no_rerun", ())):
                    try:
                        with release():
                            again = _one_run(task, harness, module, case, seed, stage, guard)
                    except Exception as exc:
                        channel.send(error_frame("error", exc, hide, rerun=True, **where))
                        return False
                    frame["rerun"] = again["outputs"]
                    if guard is not None:
                        frame["rerun_checks"] = again["checks"]
                # Only an active release waits (zeroed above): the run's own seconds.
                frame["run_s"] = round(time.perf_counter() - began - COMPILE_RELEASE.waited_s, 4)
                if plan.get("gate"):
                    # The outputs on the host, then the device is free for the others while
                    # they travel to the judge (a pipe, no device work).
                    from geak_evaluator_triton.timed_calls import to_host

                    for key in ("outputs", "rerun", "oracle"):  # a reference's oracle too
                        if key in frame:
                            frame[key] = to_host(frame[key])
                    channel.send({"kind": "ran", **where})
                channel.send({"kind": "run", **where, **frame})
    return True


def row_noise(outputs: Any, oracle: Any) -> Any:
    """The reference's own error against the oracle: per row (last dimension) the largest
    ``|output - oracle|``, at least one unit in the last place of the row's largest value,
    shaped like the output with a last dimension of 1, in float32 on the CPU; the structure
    follows ``outputs``; None where the two do not line up."""
    import torch

    if isinstance(outputs, torch.Tensor):
        if (not isinstance(oracle, torch.Tensor) or not outputs.dtype.is_floating_point
                or tuple(outputs.shape) != tuple(oracle.shape) or outputs.numel() == 0):
            return None
        diff = (outputs.to(torch.float64) - oracle.to(device=outputs.device, dtype=torch.float64)).abs()
        diff = torch.nan_to_num(diff, nan=0.0, posinf=0.0)  # no allowance from non-finite values
        # Rounding to the output's own dtype alone costs up to one unit in the last place:
        # the floor of what two correct kernels can differ by, whatever the oracle says.
        scale = torch.nan_to_num(outputs.to(torch.float64).abs(), nan=0.0, posinf=0.0)
        eps = torch.finfo(outputs.dtype).eps
        if diff.dim() == 0:
            return torch.maximum(diff, scale * eps).float().cpu()
        rows = torch.maximum(diff.amax(dim=-1, keepdim=True), scale.amax(dim=-1, keepdim=True) * eps)
        return rows.float().cpu()
    if isinstance(outputs, dict) and isinstance(oracle, dict):
        return {k: row_noise(v, oracle[k]) for k, v in outputs.items() if k in oracle}
    if isinstance(outputs, (list, tuple)) and isinstance(oracle, (list, tuple)) and len(outputs) == len(oracle):
        return [row_noise(o, r) for o, r in zip(outputs, oracle, strict=True)]
    return None


def synchronize_quietly() -> None:
    try:
        synchronize()
    except Exception:
        pass


def _one_run(task: Any, harness: Any, module: Any, case: Any, seed: int, stage: str, guard: Any) -> dict[str, Any]:
    inputs = make_inputs(harness, task, case, seed, stage)
    before = guard.before_run(inputs) if guard is not None else None
    outputs = harness.allocate(case, inputs)
    allocation = record_outputs(outputs) if guard is not None else None
    harness.run(module, case, inputs, outputs)
    objects: list[str] = []
    if allocation is not None:  # before anything reads the outputs (synchronising does not)
        outputs, objects = settle_outputs(outputs, allocation)
    synchronize()
    frame: dict[str, Any] = {"outputs": outputs}
    if guard is not None:
        frame["checks"] = guard.after_run(before, inputs, objects)
    return frame


class CandidateGuard:
    """Per-run bookkeeping of the in-process checks for one candidate (``checks/``)."""

    def __init__(self, log: Any, monitor: Any, snapshot: Any, threads: Any, files: dict[str, str]):
        self.log = log
        self.monitor = monitor
        self.snapshot = snapshot
        self.threads = threads
        self.files = files  # candidate / reference file, harness directory
        self._mark = 0

    def classify(self, launches: list[tuple[str, str, bool]]) -> LaunchCounts:
        return classify_launches(launches, self.files)

    def violations(self) -> list[str]:
        return process_violations(self.snapshot, self.threads)

    def before_run(self, inputs: Any) -> Any:
        self.monitor.take()
        self._mark = self.log.mark()
        return snapshot_inputs(inputs)

    def after_run(self, before: Any, inputs: Any, objects: list[str]) -> RunChecks:
        return {
            "launches": self.classify(self.log.since(self._mark)),
            "compute": self.monitor.take()[:20],
            "mutated": mutated_inputs(before, inputs),
            "violations": self.violations(),
            "objects": objects,
        }

    def block_checks(self) -> BlockChecks:
        """What the candidate's child adds to each block of timed calls."""
        return {"violations": self.violations(), "compute": self.monitor.take()[:20]}


def prepare_candidate(task: Any, code: str, harness: Any, log: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Write, snapshot, import; returns (module or None, guard, imported-frame)."""
    from geak_evaluator_triton.checks.contract import check_contract
    from geak_evaluator_triton.checks.tampering import IdentitySnapshot, ThreadWatch, watch_module
    from geak_evaluator_triton.checks.torch_compute import ComputeMonitor

    path = os.path.abspath(os.path.join(os.getcwd(), f"{CANDIDATE_MODULE}.py"))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(code)
    hide = {path: "candidate.py"}
    monitor = ComputeMonitor.for_entry_points(path, task.entry_points, gpu=not is_interpreter())
    snapshot = IdentitySnapshot()
    snapshot.take_defaults(is_interpreter())
    watch_module(snapshot, "harness", sys.modules[type(harness).__module__])
    threads = ThreadWatch()
    files = {
        "candidate": path,
        "reference": os.path.abspath(task.reference) if task.reference else "",
    }
    log.inside_entry_point = lambda: monitor.depth > 0
    guard = CandidateGuard(log, monitor, snapshot, threads, files)
    mark = log.mark()
    try:
        module = import_file(CANDIDATE_MODULE, path)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from candidate code too
        return None, guard, error_frame("import_error", exc, hide)
    synchronize()
    frame: ImportedFrame = {
        "kind": "imported",
        "contract": check_contract(module, task.entry_points, path),
        "violations": guard.violations(),
        "import_launches": guard.classify(log.since(mark)),
        "autotuners": find_autotuners(module),
    }
    return module, guard, frame


def candidate(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Import the candidate under guards, handshake for the plan, run it; then time it if asked.

    With ``args["timing"]`` (GPU only), after the last run the child says
    ``checked`` and waits: the judge answers with the secret timing seed only if
    every run was correct; the child draws its inputs for it on the host and
    says ``prepared``; once the judge holds the device exclusively it answers the
    judge's timing commands (``timed_calls.serve``) with the guarded entry points,
    block by block, alternating with the baseline's timer, another process.
    """
    from geak_evaluator_triton.checks.torch_compute import guard_entry_points
    from geak_evaluator_triton.timed_calls import (
        DEFER_BYTES,
        TimedSide,
        await_timing,
        cycles_per_us,
        serve,
    )

    log = setup_runtime()
    task = load_task(args["task"])
    timing = args.get("timing")
    try:
        harness = load_harness(task)
        cases = {c.name: c for c in _case_table(harness, args["case_set"])}
    except Exception as exc:
        channel.send(error_frame("setup_error", exc))
        return {"ok": False}
    if not is_interpreter():
        COMPILE_RELEASE.install()  # before the candidate exists; active only in gated runs
    began = time.perf_counter()
    module, guard, frame = prepare_candidate(task, args["code"], harness, log)
    frame["import_s"] = round(time.perf_counter() - began, 4)
    channel.send(frame)
    if module is None or frame["contract"] or frame["violations"]:
        return {"ok": False}
    plan = channel.receive()
    if plan.get("abort"):
        return {"ok": False}
    AUTOTUNE_FRAMES.channel = channel  # each new key its autotuners tune, in runs and timing
    guarded = guard_entry_points(module, task.entry_points, guard.monitor)
    hide = {guard.files["candidate"]: "candidate.py"}
    ok = run_plan(task, harness, guarded, cases, plan, channel, guard, hide=hide)
    if not ok or not timing:
        return {"ok": ok}
    # The channel's own clocks: encoding and writing frames (outputs copied off the device
    # included), and waiting for the judge's answers (device gate, comparisons).
    channel.send({"kind": "checked", "sent_s": round(getattr(channel, "sent_s", 0.0), 4),
                  "waited_s": round(getattr(channel, "waited_s", 0.0), 4)})
    seed = await_timing(channel, harness, [cases[n] for n in timing["cases"]])
    if seed is None:
        return {"ok": True}
    import torch

    flush_bytes = int(timing["options"].get("flush_bytes") or 0)
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda") if flush_bytes else None
    side = TimedSide(harness, guarded, flush, cycles_per_us(), log=log, own_file=guard.files["candidate"],
                     sample=bool(timing.get("sample")), check_inputs=True, defer_bytes=DEFER_BYTES,
                     check_objects=True)

    serve(channel, side, task, cases, hide, guard.block_checks)
    # The session is over and the judge has given the device back: the whole copies kept
    # for it (timed_calls: the pipe is slow next to the device) go now.
    kept = side.take_kept()
    if kept:
        channel.send({"kind": "verified", "cases": kept})
    return {"ok": True}


def compare(args: dict[str, Any], channel: Any) -> list[Any]:
    """Apply the harness's ``compare`` hook to (case, name, expected, actual) items."""
    task = load_task(args["task"])
    harness = load_harness(task)
    from geak_core.api.tasks import Case

    verdicts = []
    for item in args["items"]:
        case = Case.from_dict(item["case"])
        try:
            verdicts.append(harness.compare(case, item["name"], item["expected"], item["actual"]))
        except Exception as exc:
            verdicts.append(f"the harness's compare raised {type(exc).__name__}: {exc}")
    return verdicts


# ---------------------------------------------------------------------------
# Profiling
# ---------------------------------------------------------------------------


class CaseChoiceError(ValueError):
    """No case of the task can be profiled as asked."""


def profiled_case(task: Any, cases: list[Any], name: str = "") -> Any:
    """The case a profile runs: ``name`` when given, else the largest timed case (by the
    bytes it moves, then its FLOPs), of those whose requirements this device meets."""
    task_unmet = unmet(task.requires)
    if name:
        for case in cases:
            if case.name == name:
                why = task_unmet or unmet(case.requires)
                if why:
                    raise CaseChoiceError(f"case {name!r} cannot run here: {why}")
                return case
        raise CaseChoiceError(f"the task has no case {name!r} (its cases: {', '.join(c.name for c in cases)})")
    timed = [c for c in cases if c.timed and not (task_unmet or unmet(c.requires))]
    if not timed:
        raise CaseChoiceError("the task has no timed case that can run here")
    return max(timed, key=lambda c: (c.bytes or 0.0, c.flops or 0.0))


def import_hook(path: str) -> Any:
    module_name, _, name = path.partition(":")
    return getattr(importlib.import_module(module_name), name)


def profile(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Run a correct candidate on one case for a profiling tool; never a verdict.

    The candidate is imported under the guards of its judgement, the case's inputs drawn
    (``args["seed"]``), and one call made (it compiles and autotunes); then the child says
    ``ready`` and waits for the judge to hold the device alone. The profiled region follows:
    ``calls`` calls through the guarded entry points, inside the tool's ``in_child`` context
    manager (entered with the tool's folder) and, with ``region`` on a GPU, between
    ``cudaProfilerStart`` and ``cudaProfilerStop``; then ``done``. Returns the case and the
    Triton kernels launched in the region, in launch order, or ``error``: why not."""
    from geak_evaluator_triton.checks.torch_compute import guard_entry_points

    log = setup_runtime()
    task = load_task(args["task"])
    try:
        harness = load_harness(task)
        case = profiled_case(task, _case_table(harness, args["case_set"]), args.get("case") or "")
    except CaseChoiceError as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:
        return {"ok": False, "error": f"the task's harness failed: {type(exc).__name__}: {exc}"}
    hook = None
    if args.get("in_child"):
        try:  # before the candidate exists: the tool's code is the judge's, not the candidate's
            hook = import_hook(args["in_child"])
        except Exception as exc:
            return {"ok": False, "error": f"the profiler's hook {args['in_child']!r} could not be imported: "
                                          f"{type(exc).__name__}: {exc}"}
    module, guard, frame = prepare_candidate(task, args["code"], harness, log)
    if module is None:
        return {"ok": False, "error": f"the candidate failed to import: {frame['exception']}: {frame['message']}"}
    problems = list(frame["contract"]) + [f"the candidate {v}" for v in frame["violations"]]
    if problems:
        return {"ok": False, "error": "the candidate broke the judge's rules at import: " + "; ".join(problems)}
    guarded = guard_entry_points(module, task.entry_points, guard.monitor)
    calls = max(1, int(args.get("calls") or 1))
    try:
        prefetch(harness, case, args["seed"])
        inputs = make_inputs(harness, task, case, args["seed"], "stage1")
        harness.run(guarded, case, inputs, harness.allocate(case, inputs))  # compiles, autotunes
        synchronize()
        outputs = [harness.allocate(case, inputs) for _ in range(calls)]
        synchronize()
    except Exception as exc:
        return {"ok": False, "error": f"the candidate's warm-up call raised {type(exc).__name__}: {exc}"}
    problems = guard.violations()
    if problems:
        return {"ok": False, "error": "the candidate broke the judge's rules: " + "; ".join(problems)}
    channel.send({"kind": "ready", "case": case.name})
    if channel.receive().get("abort"):
        return {"ok": False, "error": "the judge stopped the profile"}
    mark = log.mark()
    began = time.perf_counter()
    try:
        with contextlib.ExitStack() as region:
            if hook is not None:
                region.enter_context(hook(os.environ.get("GEAK_TOOL_OUT", os.getcwd())))
            if args.get("region") and not is_interpreter():
                import torch

                if torch.cuda.is_available():
                    torch.cuda.profiler.start()
                    region.callback(torch.cuda.profiler.stop)
            for out in outputs:
                harness.run(guarded, case, inputs, out)
            synchronize()
    except Exception as exc:
        return {"ok": False, "error": f"a profiled call raised {type(exc).__name__}: {exc}"}
    region_s = time.perf_counter() - began
    channel.send({"kind": "done"})
    return {"ok": True, "case": case.name, "calls": calls, "region_s": round(region_s, 6),
            "launches": [name for name, _, _ in log.since(mark)]}
