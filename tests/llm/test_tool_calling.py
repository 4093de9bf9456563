"""The tool-calling types of the LLM layer, who may use them, and their replay.

The wire formats of each provider are tested beside their backends (``test_*_tools.py``);
here: what the types promise, that requests without tools are recorded and keyed as they
always were, that a backend without the ability is never handed tools, and that recorded
and scripted tool calls replay.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.errors import RecipeError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, Message, ToolCall, ToolSpec
from geak_core.api.model import EvalResult
from geak_core.engine.agent import check_run
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.recording import Budget, RecordedLLM
from geak_core.engine.store import RunStore
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_anthropic.backend import AnthropicBackend, AnthropicOptions
from geak_llm_replay.backend import ReplayBackend, ReplayOptions

from tests.support.anthropic_server import (
    AnthropicServer,
    message_body,
    thinking_block,
    tool_use_block,
)
from tests.support.llm_calls import JUDGE, with_tools
from tests.support.openai_server import Call, Reply

# -- the types -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "9lives", "judge kernel", "x" * 65, "judge.v2"])
def test_a_tool_name_some_provider_would_refuse_is_a_value_error(name):
    with pytest.raises(ValueError, match="tool name"):
        ToolSpec(name, "d", {"type": "object"})


def test_tool_parameters_must_be_an_object_schema():
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec("judge", "d", {"type": "string"})


@pytest.mark.parametrize(("choice", "tools", "wrong"), [
    ("judge_it", [JUDGE], "must be one of auto, none, required or the name of a tool offered (judge)"),
    ("required", [], "needs tools"),
])
def test_a_tool_choice_that_names_no_offered_tool_is_a_value_error(choice, tools, wrong):
    with pytest.raises(ValueError, match=wrong.replace("(", r"\(").replace(")", r"\)")):
        ChatRequest([Message("user", "hi")], tools=tools, tool_choice=choice)


def test_two_tools_of_one_name_are_a_value_error():
    with pytest.raises(ValueError, match="must differ"):
        ChatRequest([Message("user", "hi")], tools=[JUDGE, JUDGE])


@pytest.mark.parametrize(("text", "call"), [
    ('{"code": "x"}', ToolCall("c", "judge", {"code": "x"})),
    ("", ToolCall("c", "judge")),
    (None, ToolCall("c", "judge")),
    ('{"code": ', ToolCall("c", "judge", {}, '{"code": ')),
    ('"x"', ToolCall("c", "judge", {}, '"x"')),
])
def test_arguments_text_is_decoded_or_kept_as_invalid(text, call):
    assert ToolCall.from_text("c", "judge", text) == call


def test_a_request_without_tools_is_recorded_and_keyed_as_before_tools_existed():
    request = ChatRequest([Message("system", "s"), Message("user", "u")], temperature=0.5, seed=3)
    assert set(request.to_dict()) == {"messages", "n", "temperature", "top_p", "max_tokens", "seed", "meta"}
    assert request.to_dict()["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    canonical = request.canonical({"model": "m"})
    assert set(canonical) == {"identity", "messages", "n", "temperature", "top_p", "max_tokens", "seed",
                              "sample_index"}
    assert canonical["messages"] == [["system", "s"], ["user", "u"]]


def test_a_response_without_tool_calls_is_recorded_as_before_and_is_a_plain_assistant_turn():
    response = ChatResponse(["a", "b"])
    assert "tool_calls" not in response.to_dict() and "native" not in response.to_dict()
    assert response.tool_calls == [[], []]
    assert response.message(1) == Message("assistant", "b")


def test_a_tool_conversation_survives_its_dicts_with_the_same_key():
    call = ToolCall("c1", "judge", {}, '{"code": ')
    turn = Message("assistant", "", tool_calls=(call,), native={"provider": "p", "content": [{"x": 1}]})
    request = with_tools(turn, Message.tool_result(call, "bad arguments", is_error=True), tool_choice="judge")
    again = ChatRequest.from_dict(request.to_dict())
    assert again == request
    assert again.key({"model": "m"}) == request.key({"model": "m"})
    assert request.key({"model": "m"}) != with_tools(turn, Message.tool_result(call, "bad arguments")).key(
        {"model": "m"})
    response = ChatResponse(["", "done"], tool_calls=[[call], []], native=[turn.native, None])
    assert ChatResponse.from_dict(response.to_dict()) == response


def test_a_response_needs_one_list_of_calls_per_completion():
    with pytest.raises(ValueError, match="one of each per completion"):
        ChatResponse(["a", "b"], tool_calls=[[]])


# -- who may be given tools ----------------------------------------------------


def test_a_backend_without_tool_calling_is_never_sent_a_request_with_tools(tmp_path):
    asked: list[ChatRequest] = []
    plain = SimpleNamespace(identity=lambda: {"provider": "plain"}, complete=asked.append)
    with RunStore(tmp_path / "run", create=True) as store:
        recorded = RecordedLLM(plain, "plain", store, Budget())
        with pytest.raises(FatalLLMError, match="backend 'plain' cannot call tools"):
            recorded.complete(with_tools(), {"task": "t", "lineage": 0, "iteration": 0, "purpose": "generate"})
    assert asked == []


class PlainBackend:
    """A backend written against the protocol alone: it declares no tool calling."""

    def __init__(self, options=None):
        pass

    def identity(self):
        return {"provider": "plain"}

    def complete(self, request):
        raise AssertionError("never called by a check")


class AcceptingJudge(EvaluatorBase):
    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        return EvalResult(task.id, candidate.id)

    def evaluate_many(self, jobs):
        return iter(())

    def close(self):
        return None


class StandIns:
    """A backend without tool calling and a judge that accepts anything; the generator that
    needs tools is the bundled ``tools`` (agent_tools)."""

    @hookimpl
    def geak_register_llm_backends(self, register):
        register("plain", PlainBackend)

    @hookimpl
    def geak_register_evaluators(self, register):
        register("accepting", AcceptingJudge)


def tools_recipe(directory: Path, llm: str) -> Path:
    (directory / "script.toml").write_text('[[reply]]\ntext = "nothing"\n')
    path = directory / "recipe.toml"
    path.write_text(textwrap.dedent(f'''\
        [run]
        output_dir = "{directory / 'runs'}"

        [llm]
        {llm}

        [generator]
        name = "tools"

        [suite]
        name = "rocm"
        tasks = ["test_add_kernel"]

        [evaluator]
        name = "accepting"
        '''))
    return path


def test_the_recipe_check_refuses_a_generator_that_needs_tools_with_a_backend_that_cannot(tmp_path):
    manager = PluginManager(extra_plugins=[("stand-ins", StandIns())])
    path = tools_recipe(tmp_path, 'backend = "plain"')
    with pytest.raises(RecipeError) as refused:
        check_run(load_recipe(path, manager), manager)
    (problem,) = refused.value.problems
    line = path.read_text().splitlines()[problem.line - 1]
    assert (problem.key, line) == ("llm.backend", 'backend = "plain"')
    assert problem.message == 'backend "plain" cannot call tools, which generator "tools" gives the model'


def test_the_recipe_check_accepts_that_generator_with_a_backend_that_can(tmp_path):
    manager = PluginManager(extra_plugins=[("stand-ins", StandIns())])
    path = tools_recipe(tmp_path, 'backend = "replay"\nmode = "scripted"\nsource = "script.toml"')
    assert [t.id for t in check_run(load_recipe(path, manager), manager)] == ["test_add_kernel"]


# -- replay ----------------------------------------------------------------------


def test_recorded_tool_calls_replay_and_so_does_the_conversation_that_answers_them(tmp_path):
    thought = thinking_block("try the judge")
    replies = [Reply(json=message_body([thought, tool_use_block(Call("judge", {"code": "v1"}), "toolu_1")],
                                       stop_reason="tool_use")), "done"]
    slots = [{"task": "t", "lineage": 0, "iteration": i, "purpose": "generate"} for i in range(2)]
    with AnthropicServer(replies) as srv, RunStore(tmp_path / "run", create=True) as store:
        live = AnthropicBackend(AnthropicOptions(model="claude-test", base_url=srv.base_url,
                                                 thinking_budget_tokens=1024), retry=RetryPolicy())
        recorded = RecordedLLM(live, "anthropic", store, Budget())
        _, first = recorded.complete(with_tools(), slots[0])
        follow_up = with_tools(first.message(0), Message.tool_result(first.tool_calls[0][0], "correct"))
        recorded.complete(follow_up, slots[1])
    replay = ReplayBackend(ReplayOptions(source=str(tmp_path / "run")))
    again = replay.complete(with_tools())
    assert again.tool_calls == first.tool_calls and again.native == first.native
    answered = with_tools(again.message(0), Message.tool_result(again.tool_calls[0][0], "correct"))
    assert replay.complete(answered).texts == ["done"]


def test_a_script_entry_can_call_tools(tmp_path):
    script = tmp_path / "script.toml"
    script.write_text(textwrap.dedent('''\
        [[reply]]
        match = { purpose = "generate" }
        text = "Judging my draft."
        tool_calls = [{ name = "judge", arguments = { code = "def add(): ..." } }]

        [[reply]]
        text = "done"
        '''))
    backend = ReplayBackend(ReplayOptions(source=str(script), mode="scripted"))
    first = backend.complete(with_tools(meta={"purpose": "generate"}))
    assert first.texts == ["Judging my draft."] and first.finish_reasons == ["tool_calls"]
    assert first.tool_calls == [[ToolCall("call_0_0_0", "judge", {"code": "def add(): ..."})]]
    assert backend.complete(with_tools(meta={"purpose": "reflect"})).tool_calls == [[]]
