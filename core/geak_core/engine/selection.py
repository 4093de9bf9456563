"""Which of a suite's tasks a recipe's ``[suite]`` section chooses.

``tasks`` names tasks by id, ``categories`` keeps the tasks whose ``Task.category``
it names (any suite whose tasks carry one: KernelBench-X's 15 folders, say), and
``limit`` keeps the first ones. The checks here run before a run starts, so a
category the suite does not have is a located recipe error listing the ones it
has, with the closest as a suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from geak_core.api.tasks import Task

if TYPE_CHECKING:
    from geak_core.engine.recipe import Recipe, RecipeProblem


def in_categories(tasks: Iterable[Task], categories: Sequence[str]) -> list[Task]:
    """The tasks whose category is one of ``categories``; all of them when it is empty."""
    wanted = set(categories)
    return [t for t in tasks if not wanted or t.category in wanted]


def _closest(name: str, known: list[str]) -> str | None:
    same = [k for k in known if k.lower() == name.lower()]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def category_problems(recipe: Recipe, suite: str, tasks: Sequence[Task]) -> list[RecipeProblem]:
    """``suite.categories`` checked against the categories of the suite's ``tasks``: each
    unknown name, and each task of ``suite.tasks`` outside the chosen categories."""
    chosen = recipe.suite.categories
    if not chosen:
        return []
    known = sorted({t.category for t in tasks if t.category})
    if not known:
        return [recipe.problem("suite.categories", f"the tasks of suite {suite!r} carry no category",
                               "remove the key, or choose tasks with suite.tasks")]
    problems = []
    for name in chosen:
        if name not in known:
            close = _closest(name, known)
            problems.append(recipe.problem(
                "suite.categories", f"unknown category {name!r} of suite {suite!r}",
                (f"did you mean {close!r}? " if close else "") + "known: " + ", ".join(known)))
    if problems:  # the tasks are checked against the categories once those are known
        return problems
    by_id = {t.id: t for t in tasks}
    for task_id in recipe.suite.tasks:
        task = by_id.get(task_id)
        if task is not None and task.category not in chosen:
            problems.append(recipe.problem(
                "suite.tasks", f"task {task_id!r} is in category {task.category or 'none'!r}, "
                f"not one of suite.categories ({', '.join(chosen)})",
                "add its category, or leave the task out"))
    return problems


__all__ = ["category_problems", "in_categories"]
