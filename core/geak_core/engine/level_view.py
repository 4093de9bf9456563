"""Results per KernelBench level, as KernelBench reads them.

KernelBench groups its problems in levels (1: single operators, 2: fusion patterns, 3:
whole architectures) and reports its headline, fast_p, per level. A task gives its level
in ``Task.extra["level"]`` (``Task.level``); it reaches the summary the way a task's
category does (``TaskSummary.level``, then ``CategoryTask.level``). Where no task of a
run has a level (``has_levels``), summaries have no per-level view.

Per level (``level_view``), over the level's judged tasks (skipped ones left out):

* ``tasks``, ``call_accuracy``, ``execution_accuracy``, ``mean_speedup`` and
  ``speedup_tasks``: as per category (``geak_core.engine.category_view``);
* ``fast_p``: ``geak_core.api.scaling.fast_p`` of the level's tasks, against PyTorch
  eager, with how many correct tasks had no speedup against eager and why.

Levels are keyed by their number as text ("1", "2", "3"), in order; tasks without a
level (in a run where others have one) are grouped as "?".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from geak_core.api.scaling import FastTask, fast_p
from geak_core.engine.category_view import CategoryTask, category_figures

UNLEVELLED = "?"
LEVEL_FIGURES = ("tasks", "call_accuracy", "execution_accuracy", "mean_speedup", "speedup_tasks")


def has_levels(tasks: Iterable[CategoryTask]) -> bool:
    return any(t.level is not None for t in tasks)


def fast_task(task: CategoryTask) -> FastTask:
    """What fast_p takes of a task: correct, its best candidate's speedup against eager, why none."""
    return FastTask(task.correct, task.speedup_vs_eager, task.eager_gap)


def level_figures(tasks: list[CategoryTask]) -> dict[str, Any]:
    """The figures of one level's tasks (see the module's docstring)."""
    figures = category_figures(tasks)
    return {**{k: figures[k] for k in LEVEL_FIGURES},
            "fast_p": fast_p(fast_task(t) for t in tasks if t.judged)}


def level_view(tasks: Iterable[CategoryTask]) -> dict[str, dict[str, Any]]:
    """``level_figures`` per level, in order (tasks without one last, as "?"); empty where no
    task has a level."""
    tasks = list(tasks)
    if not has_levels(tasks):
        return {}
    groups: dict[int | None, list[CategoryTask]] = defaultdict(list)
    for t in tasks:
        groups[t.level].append(t)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is None, item[0] or 0))
    return {str(level) if level is not None else UNLEVELLED: level_figures(group) for level, group in ordered}


__all__ = ["LEVEL_FIGURES", "UNLEVELLED", "fast_task", "has_levels", "level_figures", "level_view"]
