"""[suite] categories: a suite's tasks chosen by category, checked before a run starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.errors import RecipeError
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.agent import preflight
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe

QUICKSTART = Path(__file__).resolve().parents[2] / "recipes" / "quickstart.toml"


class _PlainSuite:
    """Two tasks without a category."""

    name = "plain"
    description = "tasks without categories"

    def __init__(self, options=None):
        self._tasks = [Task(suite="plain", id=name, instruction="-", harness="nowhere:Never",
                            entry_points=[EntryPoint("kernel")]) for name in ("one", "two")]

    def tasks(self):
        return list(self._tasks)

    def get(self, task_id):
        return next(t for t in self._tasks if t.id == task_id)


class _PlainPlugin:
    @hookimpl
    def geak_register_suites(self, register):
        register("plain", _PlainSuite)


def _problem(overrides, plugins=None):
    plugins = plugins or PluginManager()
    recipe = load_recipe(QUICKSTART, plugins, overrides=overrides)
    with pytest.raises(RecipeError) as caught:
        preflight(recipe, plugins)
    (problem,) = caught.value.problems
    return problem


def test_categories_keep_the_named_tasks_of_those_categories():
    plugins = PluginManager()
    recipe = load_recipe(QUICKSTART, plugins, overrides=['suite.tasks=[]', 'suite.categories=["Random"]'])
    chosen = preflight(recipe, plugins)
    assert chosen and {t.category for t in chosen} == {"Random"}
    everything = {t.id for t in preflight(load_recipe(QUICKSTART, plugins, overrides=['suite.tasks=[]']), plugins)
                  if t.category == "Random"}
    assert {t.id for t in chosen} == everything


def test_an_unknown_category_names_the_closest_and_the_known_ones():
    problem = _problem(['suite.categories=["Maths"]'])
    assert problem.key == "suite.categories" and problem.file == '--set suite.categories=["Maths"]'
    assert problem.message == "unknown category 'Maths' of suite 'rocm'"
    assert problem.hint.startswith("did you mean 'Math'? known: ") and "MatrixMultiply" in problem.hint


def test_categories_on_a_suite_whose_tasks_carry_none_is_an_error():
    plugins = PluginManager(extra_plugins=[("plain", _PlainPlugin())])
    problem = _problem(["suite.name=plain", "suite.tasks=[]", 'suite.categories=["Math"]'], plugins)
    assert problem.key == "suite.categories"
    assert problem.message == "the tasks of suite 'plain' carry no category"
