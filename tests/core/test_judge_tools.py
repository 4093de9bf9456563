"""The judge's tools (``geak_core.engine.tools``) without a transport: one validation path that
names every problem with a call, the tools offered only where they can run, what ``judge``
writes (only under its output folder) and answers, the documented schemas, and ``geak-core
mcp`` set up from a recipe, or saying how to install the protocol's package.

The judge here is a stand-in that records what it is asked (the real judge's verdicts, over
MCP, are tests/evaluator/test_mcp_server.py's)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.api.components import EvaluatorBase
from geak_core.api.model import EvalResult
from geak_core.api.profiling import ProfileRecord
from geak_core.engine.records import result_record
from geak_core.engine.tools import (
    MAX_CODE_CHARS,
    TOOL_SPECS,
    TOOLS,
    JudgeTools,
    Suites,
    ToolError,
    usable_profiling,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))


class StandInJudge(EvaluatorBase):
    """Records each job; a candidate is correct when its code stores (``tl.store``)."""

    def __init__(self) -> None:
        self.judged: list[tuple[str, str]] = []
        self.profiled: list[str] = []
        self.closed = False

    def evaluate_many(self, jobs):
        for job in jobs:
            self.judged.append((job.task.key, job.candidate.code))
            correct = "tl.store" in job.candidate.code
            yield job, EvalResult(task_id=job.task.id, candidate_id=job.candidate.id, call_ok=True,
                                  correct=correct, failed_stage=None if correct else "stage1",
                                  reason=None if correct else "out differs", mode="interpreter")

    def unmet_requirements(self, task):
        return ["no GPU here"] if task.id == "stats" else []

    def profile(self, task, candidate, profiler, seconds, *, case="", calls=1):
        self.profiled.append(candidate.id)
        return ProfileRecord(profiler.profiler_name, candidate.id, case="n64", calls=calls,
                             error="the stand-in judge runs no tool")

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def plugins():
    import minisuite
    import minisuite.profiling
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    manager = PluginManager(extra_plugins=[("minisuite", minisuite), ("fakeprofiler", minisuite.profiling)])
    reset_plugin_manager(manager)
    return manager


@pytest.fixture
def tools(plugins, tmp_path):
    judge = StandInJudge()
    return JudgeTools(judge, Suites.registered(plugins), out_dir=tmp_path / "out", runs_dir=tmp_path / "runs")


ADD = (FIXTURES / "minisuite" / "references" / "add.py").read_text()


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("judge", {"suite": "mini", "task": "add"}, "missing argument 'code': The candidate: the whole Python source"),
    ("judge", {"suite": "mini", "task": "add", "code": 42}, "argument 'code': expected a string, got an integer"),
    ("judge", {"suite": "mini", "task": "add", "code": "x", "sute": "mini"}, "unknown argument 'sute' (did you mean 'suite'?)"),
    ("judge", ["mini", "add"], "the arguments must be a JSON object, got an array"),
    ("judge", {"suite": "mini", "task": "add", "code": "#" * (MAX_CODE_CHARS + 1)},
     f"argument 'code': {MAX_CODE_CHARS + 1} characters, more than the {MAX_CODE_CHARS} allowed"),
    ("judge", {"suite": "", "task": "add", "code": "x"}, "argument 'suite': must not be empty"),
    ("judge", {"suite": "minii", "task": "add", "code": "x"}, "this server serves no suite 'minii' (did you mean 'mini'?)"),
    ("judge", {"suite": "mini", "task": "ad", "code": "x"}, "suite 'mini' has no task 'ad' here (did you mean 'add'?)"),
    ("list_tasks", {"suite": "mini", "options": {"limit": -1}}, "argument 'options.limit': must be at least 0, got -1"),
    ("list_tasks", {"suite": "mini", "options": {"categories": "Math"}},
     "argument 'options.categories': expected an array, got a string"),
    ("list_tasks", {"suite": "mini", "options": {"categories": [1]}},
     "argument 'options.categories[0]': expected a string, got an integer"),
    ("list_tasks", {"suite": "mini", "options": {"category": ["Math"]}},
     "argument 'options': unknown key 'category' (did you mean 'categories'?)"),
    ("list_tasks", {"suite": "mini", "options": {"categories": ["Maths"]}}, "has no category 'Maths' (did you mean 'Math'?)"),
    ("runs_show", {"run": "../elsewhere"}, "argument 'run': a run id or a prefix of one, not a path"),
    ("runs_show", {"run": "nope"}, "argument 'run': no run 'nope' under"),
    ("profile", {"suite": "mini", "task": "add", "code": "x"}, "no tool 'profile' here"),
    ("jugde", {}, "no tool 'jugde' here (did you mean 'judge'?)"),
])
def test_a_bad_call_is_a_tool_error_that_names_the_problem_and_judges_nothing(tools, tool, arguments, message):
    with pytest.raises(ToolError) as caught:
        tools.call(tool, arguments)
    assert message in str(caught.value)
    assert caught.value.exit_code == 2
    assert tools.evaluator.judged == []


def test_judge_answers_evals_record_of_the_file_it_wrote_under_the_out_dir(plugins, tools, tmp_path):
    steps: list[str] = []
    record = tools.call("judge", {"suite": "mini", "task": "add", "code": ADD}, progress=steps.append)
    (path,) = (tmp_path / "out" / "candidates" / "mini").iterdir()
    assert path.name.startswith("add__") and path.read_text() == ADD
    task = tools.suites.task("mini", "add")
    assert record == result_record(task, EvalResult(task_id="add", candidate_id=str(path), call_ok=True,
                                                    correct=True, mode="interpreter"))
    assert tools.evaluator.judged == [("mini/add", ADD)] and steps == ["judging mini/add"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["candidates", "judged.jsonl"]
    # the journal is kept across a restart on the same folder
    again = JudgeTools(StandInJudge(), Suites.registered(plugins), out_dir=tmp_path / "out", runs_dir=tmp_path)
    again.judge("mini", "add", "pass\n")
    logged = [json.loads(line) for line in (tmp_path / "out" / "judged.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in logged] == [True, False]
    tools.close()
    assert tools.evaluator.closed


def test_tasks_are_listed_and_shown_as_a_model_sees_them(tools):
    listed = tools.call("list_tasks", {"suite": "mini", "options": {"categories": ["Reduce"], "limit": 1}})
    assert listed["count"] == 2 and [t["id"] for t in listed["tasks"]] == ["rowsum"]
    assert listed["tasks"][0]["summary"] == "out[r] = sum of row r of x, in fp32."
    shown = tools.call("show_task", {"suite": "mini", "task": "stats"})
    assert shown["key"] == "mini/stats" and shown["entry_points"][0]["signature"] == "stats(x)"
    assert shown["statement"].startswith("mini/stats  (difficulty 2, category Reduce)\n\nReturn row sums")
    assert shown["unmet_requirements"] == ["no GPU here"]
    assert "reference" not in shown and "harness" not in shown


def test_profile_is_offered_only_where_a_profiler_is_usable_and_judges_first(plugins, tmp_path):
    assert usable_profiling(plugins, None, 90.0, chosen=("fake", None)) is not None
    from minisuite.profiling import FakeProfilerOptions

    assert usable_profiling(plugins, None, 90.0, chosen=("fake", FakeProfilerOptions(unusable_because="no tool"))) is None
    profiling = usable_profiling(plugins, None, 30.0, chosen=("fake", None))
    judge = StandInJudge()
    tools = JudgeTools(judge, Suites.registered(plugins), out_dir=tmp_path, runs_dir=tmp_path, profiling=profiling)
    assert "profile" in [spec.name for spec in tools.specs()]
    wrong = tools.call("profile", {"suite": "mini", "task": "add", "code": "pass\n"})
    assert wrong["verdict"]["correct"] is False and judge.profiled == []
    assert wrong["profile"]["error"].startswith("only a correct candidate is profiled")
    right = tools.call("profile", {"suite": "mini", "task": "add", "code": ADD, "profiler": "fake"})
    assert right["verdict"]["correct"] and judge.profiled == [right["verdict"]["candidate"]]
    assert right["profile"]["profiler"] == "fake" and right["profile"]["error"] == "the stand-in judge runs no tool"
    with pytest.raises(ToolError, match="'ncu' is not usable here"):
        tools.call("profile", {"suite": "mini", "task": "add", "code": ADD, "profiler": "ncu"})


def test_the_documented_schemas_are_the_tools(tmp_path):
    text = ROOT.joinpath("docs", "mcp.md").read_text()
    section = text.split("\n## Schemas\n", 1)[1]
    documented = {name: (description.strip(), json.loads(schema)) for name, description, schema in
                  re.findall(r"### `(\w+)`\n\n(.*?)\n\n```json\n(.*?)```", section, re.S)}
    assert list(documented) == [spec.name for spec in TOOLS]
    for name, (description, schema) in documented.items():
        assert description == TOOL_SPECS[name].description, name
        assert schema == TOOL_SPECS[name].input_schema, name


def test_mcp_without_the_package_says_how_to_install_it(monkeypatch):
    from geak_core.cli.cli_mcp import mcp_command

    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    result = CliRunner().invoke(mcp_command, ["--suite", "rocm"])
    assert result.exit_code == 2
    assert "pip install 'geak-core[mcp]'" in result.stderr


def test_mcp_takes_its_suite_judge_and_budgets_from_a_recipe(plugins, tmp_path, monkeypatch):
    pytest.importorskip("mcp")
    import geak_core.cli.cli_mcp as cli_mcp

    (tmp_path / "nothing.jsonl").write_text("")
    recipe = tmp_path / "judge.toml"
    recipe.write_text('[run]\noutput_dir = "stored"\n[llm]\nbackend = "replay"\nsource = "nothing.jsonl"\n'
                      '[suite]\nname = "mini"\ncategories = ["Reduce"]\n'
                      '[evaluator]\nname = "triton"\nmode = "gpu"\ntimeout_s = 30.0\n'
                      '[tuner]\nname = "grid"\ncandidates = 3\nseconds = 9.0\n')
    served = []
    monkeypatch.setattr(cli_mcp, "serve", lambda tools, port: served.append(tools))
    monkeypatch.setattr(cli_mcp, "exit_now", lambda: None)
    result = CliRunner().invoke(cli_mcp.mcp_command, ["--recipe", str(recipe), "--mode", "interpreter",
                                                      "--out-dir", str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (tools,) = served
    assert tools.suites.names() == ["mini"] and sorted(tools.suites.tasks("mini")) == ["rowsum", "stats"]
    assert tools.evaluator.options.mode == "interpreter" and tools.evaluator.options.timeout_s == 30.0
    assert (tools.tuning.budget.candidates, tools.tuning.budget.seconds) == (3, 9.0)
    assert tools.runs_dir == Path("stored")
    tools.close()
