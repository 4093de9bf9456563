"""Results per task category, as KernelBench-X reads them.

KernelBench-X groups its tasks in 15 categories and reports, per category, the
share of tasks whose kernel compiles and runs, the share that is correct, the
mean speedup and the mean hardware efficiency max(IOU, MFU). The same view is
given for any suite whose tasks carry a category (``Task.category``); where
no task of a run carries one (``has_categories``), reports show the category
table as before, without these figures.

Per category (``category_view``):

* ``tasks``: the category's judged tasks (skipped tasks are left out);
* ``call_accuracy``: the share of those with a candidate that compiled and ran
  (KernelBench-X's call rate);
* ``execution_accuracy``: the share with a correct candidate (its exec rate);
* ``mean_speedup``: the mean, over the correct tasks whose best candidate was
  timed, of that candidate's speedup (the best candidate of a task is its
  correct candidate with the highest speedup); ``speedup_tasks`` counts them;
* ``mean_efficiency``: the mean, over the correct tasks whose best candidate
  has a roofline fraction, of that fraction: the mean over the candidate's
  timed shapes of max(achieved bandwidth / peak bandwidth, achieved FLOP rate /
  peak FLOP rate of the shape's dtype), i.e. max(IOU, MFU); a fraction needs a
  GPU whose device a hardware profile matches. ``efficiency_tasks`` counts them.

A task without a correct timed candidate is left out of the means, not counted
as 0: a mean is over what was measured, and its count says how much that was.
Tasks without a category (in a suite where others have one) are grouped as "?".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

UNCATEGORISED = "?"


@dataclass(frozen=True)
class CategoryTask:
    """What the view needs of one task: its category and its best correct candidate's figures."""

    category: str | None
    judged: bool = True  # False: skipped (hardware or feature unmet), left out of every figure
    call_ok: bool = False
    correct: bool = False
    speedup: float | None = None  # the best correct candidate's
    efficiency: float | None = None  # the same candidate's roofline fraction, max(IOU, MFU)
    # for the per-level view (geak_core.engine.level_view): the task's KernelBench level, the
    # same candidate's speedup against PyTorch eager and why it has none (scaling.eager_gap)
    level: int | None = None
    speedup_vs_eager: float | None = None
    eager_gap: str | None = None


def has_categories(tasks: Iterable[CategoryTask]) -> bool:
    return any(t.category for t in tasks)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def category_figures(tasks: list[CategoryTask]) -> dict[str, Any]:
    """The figures of one group of tasks (see the module's docstring)."""
    judged = [t for t in tasks if t.judged]
    n = len(judged)
    speedups = [t.speedup for t in judged if t.correct and t.speedup is not None]
    efficiencies = [t.efficiency for t in judged if t.correct and t.efficiency is not None]
    return {
        "tasks": n,
        "call_accuracy": sum(t.call_ok for t in judged) / n if n else None,
        "execution_accuracy": sum(t.call_ok and t.correct for t in judged) / n if n else None,
        "mean_speedup": _mean(speedups),
        "speedup_tasks": len(speedups),
        "mean_efficiency": _mean(efficiencies),
        "efficiency_tasks": len(efficiencies),
    }


def category_view(tasks: Iterable[CategoryTask]) -> dict[str, dict[str, Any]]:
    """``category_figures`` per category, sorted by name (tasks without one as "?")."""
    groups: dict[str, list[CategoryTask]] = defaultdict(list)
    for t in tasks:
        groups[t.category or UNCATEGORISED].append(t)
    return {name: category_figures(group) for name, group in sorted(groups.items())}


COLUMNS_NOTE = ("call and exec acc: share of the category's judged tasks with a candidate that ran, "
                "and with one that was correct; mean speedup and max(IOU, MFU): over the correct tasks "
                "whose best candidate was timed (how many in parentheses), max(IOU, MFU) being that "
                "candidate's achieved share of the GPU's peak bandwidth or FLOP rate, whichever is "
                "larger, averaged over its timed shapes (it needs a hardware profile of the GPU)")


__all__ = ["COLUMNS_NOTE", "UNCATEGORISED", "CategoryTask", "category_figures", "category_view",
           "has_categories"]
