"""The profiler kind in recipes and on this machine: "none" by default, older runs resume
unchanged, `doctor` says which installed profiler can run here, and the optional abilities
profiling adds are declared with their defaults."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.components import OptimizerBase, ProfilerBase, as_component
from geak_core.api.profiling import KernelCounters, ProfileLaunch, ProfileRecord
from geak_core.cli import main
from geak_core.engine.agent import recipe_changes
from geak_core.engine.plugins import PluginManager, reset_plugin_manager
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


def test_a_recipe_without_a_profiler_section_profiles_nothing(tmp_path):
    recipe = load_recipe(_recipe(tmp_path), PluginManager())
    assert recipe.components["profiler"].name == "none"
    assert recipe.data["profiler"] == {"name": "none", "when": "every_correct", "seconds": 90.0,
                                       "stop_at_peak_fraction": 0.0, "in_prompts": True}


def test_a_run_stored_before_profilers_existed_resumes_without_a_reported_change(tmp_path):
    plugins = PluginManager()
    recipe = load_recipe(_recipe(tmp_path), plugins)
    older = {k: v for k, v in recipe.data.items() if k != "profiler"}
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), recipe) == []
    stopping = load_recipe(_recipe(tmp_path, "\n[profiler]\nstop_at_peak_fraction = 0.9\n"), plugins)
    (tmp_path / "recipe.toml").write_text(dump_toml(older))
    assert recipe_changes(SimpleNamespace(dir=tmp_path), stopping) == [
        "profiler.stop_at_peak_fraction: '(unset)' -> 0.9"]


class Present(ProfilerBase):
    def __init__(self, options=None):
        pass

    def launch(self):
        return ProfileLaunch()

    def read(self, out, output):
        return [KernelCounters("k")]


class Missing(Present):
    def unusable(self):
        return ["no missing-tool on PATH"]


class Profilers:
    @hookimpl
    def geak_register_profilers(self, register):
        register("present", Present)
        register("missing", Missing)


@pytest.fixture
def with_profilers():
    reset_plugin_manager(PluginManager(extra_plugins=[("profilers", Profilers())]))
    yield
    reset_plugin_manager()


def test_doctor_says_which_installed_profiler_can_run_here(with_profilers):
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "profiler present: usable here" in lines
    assert "profiler missing: not usable here: no missing-tool on PATH" in lines
    assert not any(line.startswith("profiler none") for line in lines)
    facts = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    assert facts["profilers"]["missing"] == ["no missing-tool on PATH"]
    assert facts["profilers"]["present"] == []


def test_components_written_without_the_profiling_abilities_get_their_defaults():
    profiler = as_component("profiler", SimpleNamespace(launch=ProfileLaunch, read=lambda out, output: []))
    assert isinstance(profiler, ProfilerBase) and profiler.unusable() == []
    assert profiler.vendors == ("nvidia", "amd")
    optimizer = as_component("optimizer", SimpleNamespace(proposals=1, record=None, context=None))
    assert isinstance(optimizer, OptimizerBase)
    assert optimizer.record_profile("t@0", ProfileRecord("ncu", "c")) is None
