"""Check: no case faster than the hardware allows.

After a cache flush a kernel's inputs come from device memory: moving a case's
bytes faster than the profile's peak bandwidth, or doing its FLOPs faster than
the peak rate of its dtype, is physically impossible. A candidate measured
there did not do the work it was timed for (replayed a result, say), or the
task declares more work than the computation needs.

Interpretation (judge, here): a case whose roofline fraction exceeds
``1 + MARGIN`` flags the verdict ``above_peak`` and the case itself
(``ShapeResult.flags``), which leaves its speedup out of every aggregate
(``geak_core.api.scaling``: the headline, and all that ranks by it); under a
strict protocol (:func:`strict`) it rejects the candidate (:func:`report`).
Detection is the judge's too: the case's record turned into throughput
(``performance.shape_result``) against the hardware profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geak_core.api.model import ShapeResult

if TYPE_CHECKING:
    from geak_core.api.tasks import Task
    from geak_evaluator_triton.verdict import Verdict

MARGIN = 0.05


def above_peak(shape: ShapeResult) -> str:
    """Why ``shape`` is faster than the hardware allows, or ""."""
    fraction = shape.roofline_fraction
    if fraction is None or fraction <= 1.0 + MARGIN:
        return ""
    figures = []
    if shape.achieved_gbs:
        figures.append(f"{shape.achieved_gbs:.0f} GB/s")
    if shape.achieved_tflops:
        figures.append(f"{shape.achieved_tflops:.1f} TFLOP/s")
    return (f"case {shape.case!r} measured at {fraction:.2f}x the device's peak "
            f"({', '.join(figures)}), which no kernel can reach after a cache flush")


def strict(task: Task) -> bool:
    """Whether ``task`` is judged under a strict protocol: its entry points may not compute
    with torch (``Task.forbid_torch_compute``), or its suite says so
    (``Task.extra["protocol"] == "strict"``, TritonBench's own-namespaces protocol)."""
    return bool(task.forbid_torch_compute or task.extra.get("protocol") == "strict")


def report(verdict: Verdict, shape: ShapeResult, task: Task) -> str:
    """Flag ``above_peak`` on the verdict and on ``shape`` when ``shape`` is faster than the
    hardware allows (its speedup then counts in no aggregate); under a strict protocol
    (:func:`strict`), reject too. Returns why, or ""."""
    why = above_peak(shape)
    if why:
        verdict.flag("above_peak")
        if "above_peak" not in shape.flags:
            shape.flags.append("above_peak")
        if strict(task):
            verdict.fail("anticheat", f"{why}: the timed calls did not do the case's work",
                         key=f"above_peak:{shape.case}")
    return why
