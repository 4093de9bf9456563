"""The tuner kind: chosen by [tuner] name, "none" by default, its optional ability declared."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest
from geak_core.api.components import TuneBudget, TunerBase, TuneResult, as_component
from geak_core.api.errors import RecipeError
from geak_core.api.model import Candidate
from geak_core.engine.agent import recipe_changes
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dump_toml, load_recipe

RECIPE = textwrap.dedent('''\
    [llm]
    backend = "replay"
    source = "{source}"
''')


def _recipe(tmp_path, extra=""):
    path = tmp_path / "recipe.toml"
    path.write_text(RECIPE.format(source=tmp_path) + extra)
    return path


def test_a_recipe_without_a_tuner_section_tunes_nothing(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path), plugins)
    chosen = recipe.components["tuner"]
    assert (chosen.name, recipe.data["tuner"]) == ("none", {"name": "none"})
    tuner = plugins.build("tuner", chosen.name, chosen.options)
    assert plugins.spec("tuner", "none").plugin == "geak_core.engine.builtin"
    result = tuner.tune(None, Candidate("c1", "t", "x = 1\n"), None, TuneBudget())
    assert result == TuneResult()


def test_the_grid_tuner_is_chosen_and_its_options_validated(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path, '\n[tuner]\nname = "grid"\ndtype_bytes = 4\n'), plugins)
    assert recipe.data["tuner"] == {"name": "grid", "dtype_bytes": 4}
    assert plugins.spec("tuner", "grid").plugin == "tuner-grid"
    with pytest.raises(RecipeError) as bad:
        load_recipe(_recipe(tmp_path, '\n[tuner]\nname = "grid"\ndtype_bytes = 3\nbudget = 1\n'), plugins)
    said = "\n".join(p.format() for p in bad.value.problems)
    assert "[tuner.dtype_bytes]" in said and "[tuner.budget] unknown key" in said


def test_a_tuner_written_against_the_protocol_alone_gets_the_default_abilities():
    tuner = as_component("tuner", SimpleNamespace(tune=lambda task, candidate, judge, budget: TuneResult()))
    assert isinstance(tuner, TunerBase) and tuner.set_hardware(None) is None


def test_a_run_stored_before_tuners_existed_resumes_without_a_reported_change(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path), plugins)
    older = {k: v for k, v in recipe.data.items() if k != "tuner"}
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), recipe) == []
    grid = load_recipe(_recipe(tmp_path, '\n[tuner]\nname = "grid"\n'), plugins)
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), grid) == [
        "tuner.dtype_bytes: '(unset)' -> 2", "tuner.name: '(unset)' -> 'grid'"]
