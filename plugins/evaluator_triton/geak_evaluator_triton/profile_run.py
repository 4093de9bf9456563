"""The judge's side of a profile: one correct candidate, one case, under a profiler's tool.

``TritonEvaluator.profile`` runs the candidate's own code in a child job of its own
(``child_jobs.profile``), started by the profiler's tool (``ProfileLaunch.wrapper``, put
before the child's command by the sandbox's ``Wrapper``) in the sandbox and confinement of
every candidate child: the scrubbed environment, its own process group, Landlock, the
candidate's own Triton cache (what its judgement compiled is found again). The tool writes
to a folder inside the child's directory, handed back when the child ends, and the
profiler reads it (``Profiler.read``).

The child holds the device alone (the device gate, exclusively, as timing does) from its
warm-up call's end to its profiled calls' end, so a profile never runs beside another
candidate's runs or timing, and nothing runs beside it. A profile touches no verdict, no
reference and no timing: every failure (the tool missing or unusable, the child timing out
or crashing, the tool's output unreadable) comes back as the record's ``error``.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from geak_core.api.components import ProfilerBase
from geak_core.api.model import Candidate
from geak_core.api.profiling import KernelCounters, ProfileRecord
from geak_core.api.tasks import Task
from geak_core.kit.sandbox import Replier, SandboxResult, Wrapper

from geak_evaluator_triton.candidate_run import Gating
from geak_evaluator_triton.child_pool import Children, task_payload
from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.protocol import GO, FrameHandler
from geak_evaluator_triton.run_compare import tail

# What the tool and the child printed, kept for the profiler (head and tail): a tool's report
# on stdout runs to megabytes where the child's own output is kilobytes.
PROFILE_OUTPUT_BYTES = 16 << 20


class ProfileFrames(FrameHandler):
    """Reads the profiled child's frames: the device is held alone from ``ready`` (the warm-up
    is done; the child waits) to ``done`` (the profiled calls are over)."""

    def __init__(self, gating: Gating) -> None:
        self.gating = gating
        self.replier: Replier | None = None

    def __call__(self, message: Any, replier: Replier) -> Any:
        self.replier = replier
        return self.handle(message)

    def on_ready(self, frame: dict[str, Any]) -> None:
        assert self.replier is not None
        self.gating.hold_exclusive(self.replier)  # its wait is not charged to the child's budget
        self.replier.send(GO)

    def on_done(self, frame: dict[str, Any]) -> None:
        self.gating.release()


def why_not(profiler: ProfilerBase) -> str:
    """Why ``profiler`` cannot run here ("" when it can): its own ``unusable()``, or its tool's
    command not found."""
    problems = list(profiler.unusable())
    if problems:
        return "; ".join(problems)
    command = profiler.launch().wrapper
    if command and shutil.which(command[0]) is None:
        return f"the profiler's tool {command[0]!r} is not installed here (not found on PATH)"
    return ""


def same_kernel(tool_name: str, triton_name: str) -> bool:
    """Whether the kernel a tool names is the Triton kernel ``triton_name``: tools add a
    signature (``add_kernel(float*, ...)``), a return type (``void``), a code-object suffix
    (``.kd``) or, on older Triton, a specialisation suffix (``add_kernel_0d1d2d``)."""
    name = tool_name.split("(", 1)[0].strip().removeprefix("void ").strip().removesuffix(".kd")
    return name == triton_name or name.startswith(triton_name + "_")


def region_kernels(kernels: Sequence[KernelCounters], launches: Sequence[str]) -> list[KernelCounters]:
    """The profiled calls' kernels among all a tool saw, for a tool that cannot be told where
    the region is (it records the warm-up too): the last ``len(launches)`` kernels named like
    the region's Triton launches. Without Triton launches to go by, all of them."""
    if not launches:
        return list(kernels)
    kept: list[KernelCounters] = []
    for kernel in reversed(kernels):
        if any(same_kernel(kernel.name, name) for name in launches):
            kept.append(kernel)
            if len(kept) == len(launches):
                break
    return kept[::-1]


def run_profile(children: Children, runtime: Runtime, slot: Slot, task: Task, candidate: Candidate,
                profiler: ProfilerBase, seconds: float, case: str, calls: int) -> ProfileRecord:
    """Profile ``candidate`` on ``slot`` (see the module's docstring); ``seconds``: the child's
    budget, from its start to its end, the wait for the device left out."""
    launch = profiler.launch()
    out = tempfile.mkdtemp(prefix="geak-profile-")
    gating = Gating(slot, shared_runs=False)
    record = ProfileRecord(profiler.profiler_name, candidate.id, case=case, calls=calls)
    try:
        args = {"task": task_payload(task), "code": candidate.code, "case_set": runtime.case_set,
                "case": case, "calls": calls, "seed": secrets.randbelow(2**31 - 1),
                "in_child": launch.in_child, "region": launch.region}
        sandbox = children.run("profile", args, slot.env, timeout=seconds,
                               cache=children.candidate_cache(candidate.code), on_message=ProfileFrames(gating),
                               wrapper=Wrapper(launch.wrapper, dict(launch.env), out),
                               output_limit=PROFILE_OUTPUT_BYTES)
        gating.release()
        returned = sandbox.returned if sandbox.completed else None
        if isinstance(returned, dict) and returned.get("case"):
            record = dataclasses.replace(record, case=returned["case"])
        problem = _failure(sandbox, returned, seconds)
        if problem:
            return dataclasses.replace(record, error=problem)
        try:
            kernels = list(profiler.read(out, sandbox.stdout + sandbox.stderr))
        except ValueError as exc:
            return dataclasses.replace(record, error=f"the profiler's output could not be read: {exc}")
        if not launch.region and not launch.in_child:
            kernels = region_kernels(kernels, returned["launches"])
        if not kernels:
            return dataclasses.replace(record, error="the profiler reported no kernel of the profiled calls"
                                                     + tail(sandbox.stderr, 500))
        return dataclasses.replace(record, kernels=tuple(kernels))
    finally:
        gating.release()
        shutil.rmtree(out, ignore_errors=True)


def _failure(sandbox: SandboxResult, returned: Any, seconds: float) -> str:
    """Why the profiled child gave nothing to read ("" when it did)."""
    if sandbox.timed_out:
        return (f"the profile ran out of its budget of {seconds:g} s: the child {sandbox.describe_exit()}"
                + tail(sandbox.stderr, 500))
    if not sandbox.completed:
        return f"the profiled child {sandbox.describe_exit()}" + tail(sandbox.stderr, 1000)
    if not isinstance(returned, dict) or not returned.get("ok"):
        return str((returned or {}).get("error") or "the profiled child returned nothing")
    return ""
