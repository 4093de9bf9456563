"""Recipes are validated before any work, with file, line, key and a suggestion."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import pytest
from geak_core import hookimpl
from geak_core.api.errors import RecipeError
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dump_toml, load_recipe, locate_keys


@dataclass
class EchoOptions:
    model: str
    temperature: float = 1.0
    api_key_env: str = field(default="", metadata={"env": True})
    mode: str = field(default="a", metadata={"choices": ["a", "b"]})


class EchoBackend:
    max_concurrency = 1

    def __init__(self, options):
        self.options = options

    def identity(self):
        return {"provider": "echo", "model": self.options.model}

    def complete(self, request):  # pragma: no cover - not called here
        raise NotImplementedError


class FakeEvaluator:
    def __init__(self, options):
        pass


class _Plugin:
    @hookimpl
    def geak_register_llm_backends(self, register):
        register("echo", EchoBackend, options=EchoOptions)

    @hookimpl
    def geak_register_evaluators(self, register):
        register("triton", FakeEvaluator)

    @hookimpl
    def geak_register_suites(self, register):
        register("rocm", lambda options: None)

    @hookimpl
    def geak_register_prompt_templates(self, register):
        register("default", lambda options: None)

    # the recipe defaults of the GEAK modules ([generator], [reflector], [policy])
    @hookimpl
    def geak_register_generators(self, register):
        register("geak", lambda options: None)

    @hookimpl
    def geak_register_reflectors(self, register):
        register("geak", lambda options: None)

    @hookimpl
    def geak_register_policies(self, register):
        register("geak", lambda options: None)


@pytest.fixture
def plugins():
    return PluginManager(load_entry_points=False, extra_plugins=[("test", _Plugin())])


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(path, plugins, **kw):
    with pytest.raises(RecipeError) as info:
        load_recipe(path, plugins, **kw)
    return info.value.problems


def test_a_valid_recipe_resolves_every_default(tmp_path, plugins):
    path = write(tmp_path, "r.toml", """
        [llm]
        backend = "echo"
        model = "m"
    """)
    recipe = load_recipe(path, plugins)
    assert recipe.components["llm"].options.temperature == 1.0
    assert recipe.agent.iterations == 10
    assert recipe.data["llm"] == {"backend": "echo", "model": "m", "temperature": 1.0,
                                  "api_key_env": "", "mode": "a"}
    assert recipe.data["retriever"]["name"] == "none"


def test_a_misspelt_key_is_reported_with_file_line_and_suggestion(tmp_path, plugins):
    path = write(tmp_path, "r.toml", """
        [llm]
        backend = "echo"
        model = "m"
        temprature = 0.5
    """)
    (problem,) = problems_of(path, plugins)
    assert problem.file == str(path.resolve())
    assert problem.line == 5
    assert problem.key == "llm.temprature"
    assert "did you mean 'temperature'" in problem.format()


def test_wrong_types_unknown_sections_and_components_are_all_reported_at_once(tmp_path, plugins):
    path = write(tmp_path, "r.toml", """
        [agnet]
        iterations = 3

        [agent]
        lineages = "many"

        [llm]
        backend = "ecko"

        [optimizer]
        name = "oprp"
    """)
    found = {p.key: p for p in problems_of(path, plugins)}
    assert "did you mean 'agent'" in found["agnet"].format()
    assert found["agent.lineages"].line == 6 and "expected integer" in found["agent.lineages"].message
    assert "did you mean 'echo'" in found["llm.backend"].format()
    assert found["optimizer.name"].line == 12


def test_invalid_choice_lists_the_valid_values(tmp_path, plugins):
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\nmode = "c"\n')
    (problem,) = problems_of(path, plugins)
    assert problem.key == "llm.mode" and "'a', 'b'" in problem.format()


def test_a_moved_key_names_its_new_place(tmp_path, plugins):
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n\n[agent]\nmax_debug_attempts = 2\n')
    (problem,) = problems_of(path, plugins)
    assert problem.key == "agent.max_debug_attempts" and problem.line == 6
    assert "set policy.max_debug_attempts instead" in problem.format()


def test_a_list_option_with_choices_names_the_invalid_item(tmp_path, plugins):
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n\n[retriever]\nrounds = ["reflect", "debug"]\n')
    (problem,) = problems_of(path, plugins)
    assert problem.key == "retriever.rounds" and "invalid value 'debug'" in problem.format()
    assert "'optimize'" in problem.format()


def test_missing_required_option_is_reported(tmp_path, plugins):
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\n')
    (problem,) = problems_of(path, plugins)
    assert problem.key == "llm.model" and "missing required key" in problem.message


def test_missing_api_key_variable_is_an_error_unless_env_checks_are_off(tmp_path, plugins, monkeypatch):
    monkeypatch.delenv("ECHO_KEY_FOR_TEST", raising=False)
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\napi_key_env = "ECHO_KEY_FOR_TEST"\n')
    (problem,) = problems_of(path, plugins)
    assert "ECHO_KEY_FOR_TEST is not set" in problem.message and problem.line == 4
    load_recipe(path, plugins, check_env=False)
    monkeypatch.setenv("ECHO_KEY_FOR_TEST", "x")
    load_recipe(path, plugins)


def test_include_makes_an_ablation_a_few_lines_and_errors_point_at_the_right_file(tmp_path, plugins):
    write(tmp_path, "base.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n\n[agent]\niterations = 4\n')
    child = write(tmp_path, "child.toml", 'include = "base.toml"\n\n[agent]\nlineages = 2\n')
    recipe = load_recipe(child, plugins)
    assert (recipe.agent.iterations, recipe.agent.lineages) == (4, 2)
    broken = write(tmp_path, "broken.toml", 'include = "base.toml"\n[agent]\nlineage = 2\n')
    (problem,) = problems_of(broken, plugins)
    assert problem.file == str(broken.resolve()) and problem.line == 3


def test_include_cycles_and_bad_toml_are_located(tmp_path, plugins):
    write(tmp_path, "a.toml", 'include = "b.toml"\n')
    write(tmp_path, "b.toml", 'include = "a.toml"\n')
    (problem,) = problems_of(tmp_path / "a.toml", plugins)
    assert "include cycle" in problem.message
    bad = write(tmp_path, "bad.toml", '[llm]\nbackend = \n')
    (problem,) = problems_of(bad, plugins)
    assert problem.line == 2 and "invalid TOML" in problem.message


def test_resolved_recipe_round_trips_through_toml(tmp_path, plugins):
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n[suite]\ntasks = ["a", "b"]\n')
    recipe = load_recipe(path, plugins)
    again = write(tmp_path, "resolved.toml", dump_toml(recipe.data))
    assert load_recipe(again, plugins).data == recipe.data


def test_locate_keys_handles_tables_and_dotted_keys():
    lines = locate_keys('a = 1\n[x.y]\nb.c = 2\n  d = "e"\n')
    assert lines == {"a": 1, "x.y": 2, "x.y.b.c": 3, "x.y.d": 4}


@dataclass
class PathOptions:
    source: str = field(default="", metadata={"path": True})


class _PathPlugin:
    @hookimpl
    def geak_register_retrievers(self, register):
        register("files", lambda options: options, options=PathOptions)


def test_path_options_resolve_relative_to_the_recipe_that_sets_them(tmp_path):
    pm = PluginManager(load_entry_points=False, extra_plugins=[("t", _Plugin()), ("p", _PathPlugin())])
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "base.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n[retriever]\nname = "files"\nsource = "data/x.jsonl"\n')
    child = write(tmp_path, "child.toml", 'include = "sub/base.toml"\n')
    (problem,) = problems_of(child, pm)  # every path option names an input: it must exist
    assert problem.key == "retriever.source"
    assert problem.message == f"no such file or folder: {tmp_path / 'sub' / 'data' / 'x.jsonl'}"
    (tmp_path / "sub" / "data").mkdir()
    (tmp_path / "sub" / "data" / "x.jsonl").write_text("")
    recipe = load_recipe(child, pm)
    assert recipe.components["retriever"].options.source == str(tmp_path / "sub" / "data" / "x.jsonl")


def test_a_path_option_reads_environment_variables_and_names_the_unset_ones(tmp_path, monkeypatch):
    pm = PluginManager(load_entry_points=False, extra_plugins=[("t", _Plugin()), ("p", _PathPlugin())])
    path = write(tmp_path, "r.toml", '[llm]\nbackend = "echo"\nmodel = "m"\n[retriever]\nname = "files"\n'
                                     'source = "${GEAK_TEST_DATA}/${GEAK_TEST_FILE}"\n')
    monkeypatch.delenv("GEAK_TEST_DATA", raising=False)
    monkeypatch.setenv("GEAK_TEST_FILE", "")  # empty counts as unset
    (problem,) = problems_of(path, pm)
    assert (problem.file, problem.line, problem.key) == (str(path), 6, "retriever.source")
    assert problem.message == ("environment variables GEAK_TEST_DATA, GEAK_TEST_FILE are not set "
                               "(the path is '${GEAK_TEST_DATA}/${GEAK_TEST_FILE}')")
    assert problem.hint == "export GEAK_TEST_DATA=...; export GEAK_TEST_FILE=..."
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.jsonl").write_text("")
    monkeypatch.setenv("GEAK_TEST_DATA", "data")  # relative: to the recipe, as a written path
    monkeypatch.setenv("GEAK_TEST_FILE", "x.jsonl")
    recipe = load_recipe(path, pm)
    assert recipe.components["retriever"].options.source == str(tmp_path / "data" / "x.jsonl")
    assert recipe.data["retriever"]["source"] == str(tmp_path / "data" / "x.jsonl")  # stored resolved


def test_a_default_api_key_variable_is_required_for_the_providers_own_host(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pm = PluginManager()
    official = write(tmp_path, "o.toml", '[llm]\nbackend = "openai"\nmodel = "gpt-4.1"\n')
    (problem,) = problems_of(official, pm)
    assert problem.key == "llm.api_key_env" and "OPENAI_API_KEY is not set" in problem.message
    local = write(tmp_path, "l.toml", '[llm]\nbackend = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:8000/v1"\n')
    load_recipe(local, pm)  # no key is ever sent to another server, so none is needed


def test_command_line_overrides_set_keys_validated_like_the_files(tmp_path, plugins):
    path = write(tmp_path, "r.toml", """
        [llm]
        backend = "echo"
        model = "m"

        [agent]
        iterations = 3
    """)
    recipe = load_recipe(path, plugins, overrides=["agent.iterations=5", 'suite.tasks=["softmax"]',
                                                   "suite.limit=1", "llm.model=other"])
    assert recipe.agent.iterations == 5 and recipe.suite.tasks == ["softmax"] and recipe.suite.limit == 1
    assert recipe.components["llm"].options.model == "other"  # a bare word is a string
    assert "iterations = 5" in dump_toml(recipe.data)  # what the run stores with itself
    # a wrong type, an unknown key and a malformed pair: located at --set, with the usual hints
    found = [p.format() for p in problems_of(path, plugins, overrides=["agent.iterations=many"])]
    assert found and found[0].startswith("--set agent.iterations=many: [agent.iterations]")
    found = [p.format() for p in problems_of(path, plugins, overrides=["agent.iteratons=5"])]
    assert found == ["--set agent.iteratons=5: [agent.iteratons] unknown key (did you mean 'iterations'?)"]
    found = [p.format() for p in problems_of(path, plugins, overrides=["iterations"])]
    assert found and "expected KEY=VALUE" in found[0]
    found = [p.format() for p in problems_of(path, plugins, overrides=["agent.iterations.x=1"])]
    assert found == ["--set agent.iterations.x=1: [agent.iterations] is not a table"]


def test_a_command_line_key_value_pair_is_read_one_way_everywhere():
    """``--set``, ``geak-core eval --option`` and the benches' ``--evaluator-option`` read
    ``KEY=VALUE`` with one helper: TOML values, a bare word as the string (stripped)."""
    from geak_core.engine.recipe import key_value
    from geak_evaluator_triton.options import option_pairs

    assert key_value("agent.iterations=5") == ("agent.iterations", 5)
    assert key_value(' suite.tasks = ["softmax"]') == ("suite.tasks", ["softmax"])
    assert key_value("mode= gpu ") == ("mode", "gpu")
    assert key_value("pin_timing_cpus=false") == ("pin_timing_cpus", False)
    assert key_value("no-equals") is None and key_value(" =5") is None
    assert option_pairs(["rep_ms=400", "mode= gpu"], "--evaluator-option") == {"rep_ms": 400, "mode": "gpu"}
    with pytest.raises(ValueError, match="--evaluator-option 'nonsense=1'"):
        option_pairs(["nonsense=1"], "--evaluator-option")
