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
    assert (chosen.name, recipe.data["tuner"]) == (
        "none", {"name": "none", "candidates": 16, "seconds": 120.0, "when": "every_correct"})
    tuner = plugins.build("tuner", chosen.name, chosen.options)
    assert plugins.spec("tuner", "none").plugin == "geak_core.engine.builtin"
    result = tuner.tune(None, Candidate("c1", "t", "x = 1\n"), None, TuneBudget())
    assert result == TuneResult()


def test_the_grid_tuner_is_chosen_and_its_options_validated(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path, '\n[tuner]\nname = "grid"\ndtype_bytes = 4\n'), plugins)
    assert recipe.data["tuner"] == {"name": "grid", "candidates": 16, "seconds": 120.0,
                                    "when": "every_correct", "dtype_bytes": 4}
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


def test_the_tuning_budget_and_when_are_read_from_the_tuner_section(tmp_path):
    extra = '\n[tuner]\nname = "grid"\ncandidates = 4\nseconds = 30\nwhen = "best"\n'
    recipe = load_recipe(_recipe(tmp_path, extra), PluginManager())
    assert (recipe.tuner.candidates, recipe.tuner.seconds, recipe.tuner.when) == (4, 30.0, "best")
    assert recipe.components["tuner"].options.dtype_bytes == 2  # the grid's own option untouched


def test_a_bad_budget_is_located_at_its_line_with_what_would_be_valid(tmp_path):
    extra = '\n[tuner]\nname = "grid"\ncandidates = 0\nseconds = -1\nwhen = "always"\n'
    path = _recipe(tmp_path, extra)
    with pytest.raises(RecipeError) as bad:
        load_recipe(path, PluginManager())
    lines = path.read_text().splitlines()
    said = {p.key: p for p in bad.value.problems}
    assert set(said) == {"tuner.candidates", "tuner.seconds", "tuner.when"}
    for key, problem in said.items():
        assert (problem.file, lines[problem.line - 1].split(" =")[0]) == (str(path), key.split(".")[1])
    assert "must be at least 1, got 0" in said["tuner.candidates"].message
    assert "must be more than 0, got -1" in said["tuner.seconds"].message
    assert "'every_correct', 'best'" in said["tuner.when"].hint


def test_a_misspelt_budget_key_is_answered_with_the_key_meant(tmp_path):
    for name in ("none", "grid"):  # a tuner without options of its own, and one with
        path = _recipe(tmp_path, f'\n[tuner]\nname = "{name}"\ncandidate = 4\n')
        with pytest.raises(RecipeError) as bad:
            load_recipe(path, PluginManager())
        (problem,) = bad.value.problems
        assert (problem.key, problem.hint) == ("tuner.candidate", "did you mean 'candidates'?")


def test_a_run_stored_before_the_budget_keys_resumes_without_a_reported_change(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path), plugins)
    older = {**recipe.data, "tuner": {"name": "none"}}
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), recipe) == []
    fewer = load_recipe(_recipe(tmp_path, '\n[tuner]\ncandidates = 2\n'), plugins)
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), fewer) == ["tuner.candidates: '(unset)' -> 2"]


def test_a_prompt_shows_at_most_the_limit_of_a_variants_knob_lines():
    from geak_core.engine.tuning import knob_lines, prompt_knobs

    lines = knob_lines("k.BLOCK_M 64->128, k.BLOCK_N 64->32, k.num_warps 4->8, k.num_stages 3->4")
    assert prompt_knobs(lines, 4) == tuple(lines)
    assert prompt_knobs(lines, 3) == ("k.BLOCK_M 64->128", "k.BLOCK_N 64->32", "(and 2 more knobs)")
