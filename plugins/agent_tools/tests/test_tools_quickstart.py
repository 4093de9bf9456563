"""The tool-calling mode on the quickstart's tasks, judged for real (the Triton interpreter),
its model a loopback server speaking OpenAI's and Anthropic's protocols with scripted tool
calls: it reads the task, has a wrong kernel judged, then a correct one, and answers without
code. Each task's candidate is its correct draft, and ``geak-core runs log`` shows every call
with its result; the offline recipe's ablation pair differs by its generator alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dotted, load_recipe
from geak_core.engine.store import RunStore

from tests.support.anthropic_server import AnthropicServer
from tests.support.openai_server import Call, OpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "recipes"
REPLIES = RECIPES / "quickstart" / "replies"


def kernel(name: str) -> str:
    return re.search(r"```python\n(.*?)```", (REPLIES / f"{name}.md").read_text(), re.S).group(1)


# per task: a kernel the judge finds wrong (add: does not compile; softmax: overflows on outliers),
# then a correct one
DRAFTS = {"test_add_kernel": (kernel("add_generate"), kernel("add_reflect")),
          "softmax": (kernel("softmax_generate"), kernel("softmax_reflect"))}


def scripted(request) -> Reply | str:
    """Reply 1: show_task; 2: judge the wrong kernel; 3: judge the correct one; 4: the answer.
    The task is read from the prompt, the turn from the assistant turns the request holds."""
    body = json.dumps(request.body)
    task = next(t for t in DRAFTS if f"for task `{t}`" in body)
    turn = sum(1 for m in request.body["messages"] if m.get("role") == "assistant")
    wrong, correct = DRAFTS[task]
    return [Reply.calling(Call("show_task"), text="First the task."),
            Reply.calling(Call("judge", {"code": wrong}), text="Strategy: a first draft."),
            Reply.calling(Call("judge", {"code": correct}), text="Strategy: the fix the judge asked for."),
            f"The judge found my second draft of {task} correct; it is my answer."][turn]


@pytest.mark.slow
@pytest.mark.parametrize(("server", "backend"), [(OpenAIServer, "openai"), (AnthropicServer, "anthropic")])
def test_the_quickstarts_tasks_in_tool_calling_mode_with_every_call_in_runs_log(server, backend, tmp_path):
    plugins = PluginManager()
    with server(scripted) as srv:
        llm = {"backend": backend, "model": "scripted-model", "base_url": srv.base_url, "max_retries": 0}
        recipe = load_recipe(RECIPES / "tools.toml", plugins, sections={"llm": (llm, "the test's server")})
        recipe.run.output_dir = str(tmp_path)
        summary = run_recipe(recipe, plugins, echo=lambda line: None)
    assert len(srv.requests) == 8  # four turns a task; the server checks that every call was answered
    assert summary.status == "finished" and summary.execution_accuracy == 1.0
    assert {k: summary.tools[k] for k in ("calls", "errors", "drafts", "drafts_correct")} == \
        {"calls": 6, "errors": 0, "drafts": 4, "drafts_correct": 2}
    store = RunStore(tmp_path / summary.run_id)
    for task, (wrong, correct) in DRAFTS.items():
        codes = {c.id: c.code for c in store.candidates(task)}
        assert codes == {f"{task}/L0/I0/T2": wrong, f"{task}/L0/I0/T3": correct, f"{task}/L0/I0": correct}
    result = CliRunner().invoke(main, ["runs", "log", str(store.dir)])
    assert result.exit_code == 0, result.output
    text = result.output
    events = [e for e in store.iter_events("tool_call")]
    assert len(events) == 6
    for event in events:
        payload = event["payload"]
        assert f"--- tool call {payload['index']} (turn {payload['turn']}): {payload['tool']}(" in text
        assert payload["result"] in text
    for task in DRAFTS:
        assert f"-> {task}/L0/I0/T2" in text and f"-> {task}/L0/I0/T3" in text
        assert f"The judge found my second draft of {task} correct" in text
    assert text.count("--- verdict: correct") == 4 and text.count("--- verdict: ") == 6


def test_the_ablation_pair_differs_by_its_generator_alone():
    plugins = PluginManager()
    loop, tools = (dotted(load_recipe(RECIPES / "ablations" / f"{name}.toml", plugins, check_env=False).data)
                   for name in ("7-loop", "8-tools"))
    changed = {key for key in set(loop) | set(tools) if loop.get(key) != tools.get(key)}
    assert changed == {"generator.name", "generator.max_tool_calls", "generator.max_tool_seconds"}
    assert (loop["generator.name"], tools["generator.name"]) == ("geak", "tools")
    assert loop["llm.source"] == tools["llm.source"] and loop["run.max_llm_calls"] == tools["run.max_llm_calls"] > 0
