"""Tool use of the anthropic backend, end to end against a Messages API server on 127.0.0.1."""

from __future__ import annotations

import pytest
from geak_core.api.llm import FatalLLMError, Message, ToolCall
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_anthropic.backend import AnthropicBackend, AnthropicOptions

from tests.support.anthropic_server import (
    AnthropicServer,
    message_body,
    text_block,
    thinking_block,
    tool_use_block,
)
from tests.support.llm_calls import JUDGE, Sleeps, with_tools
from tests.support.openai_server import Call, Reply


def make(srv: AnthropicServer, **options) -> AnthropicBackend:
    return AnthropicBackend(AnthropicOptions(model="claude-test", base_url=srv.base_url, max_retries=1, **options),
                            retry=RetryPolicy(sleep=Sleeps()))


def test_the_backend_declares_tool_calling():
    assert AnthropicBackend.tool_calling is True


def test_tools_go_out_with_their_input_schema_and_the_default_choice_is_left_to_the_api():
    with AnthropicServer(["ok"]) as srv:
        make(srv).complete(with_tools())
    body = srv.requests[0].body
    assert body["tools"][0] == {"name": "judge", "description": JUDGE.description, "input_schema": JUDGE.parameters}
    assert [t["name"] for t in body["tools"]] == ["judge", "profile"]
    assert "tool_choice" not in body


@pytest.mark.parametrize(("choice", "sent"), [
    ("none", {"type": "none"}),
    ("required", {"type": "any"}),
    ("judge", {"type": "tool", "name": "judge"}),
])
def test_a_tool_choice_is_sent_in_the_apis_form(choice, sent):
    with AnthropicServer(["ok"]) as srv:
        make(srv).complete(with_tools(tool_choice=choice))
    assert srv.requests[0].body["tool_choice"] == sent


def test_forcing_a_tool_with_thinking_on_is_refused_before_any_request():
    with AnthropicServer(["never"]) as srv, pytest.raises(FatalLLMError, match="thinking"):
        make(srv, thinking_budget_tokens=1024).complete(with_tools(tool_choice="required"))
    assert srv.requests == []


def test_tool_use_blocks_are_decoded_and_the_whole_content_is_kept_as_the_turns_native():
    reply = Reply.calling(Call("judge", {"code": "v1"}, id="toolu_a"), Call("profile", id="toolu_b"),
                          text="Checking the draft.")
    with AnthropicServer([reply]) as srv:
        response = make(srv).complete(with_tools())
    assert response.tool_calls == [[ToolCall("toolu_a", "judge", {"code": "v1"}), ToolCall("toolu_b", "profile")]]
    assert response.texts == ["Checking the draft."]
    assert response.finish_reasons == ["tool_use"]
    assert response.native == [{"provider": "anthropic", "content": response.raw[0]["content"]}]


def test_the_follow_up_returns_the_content_then_all_results_in_one_user_message_ahead_of_text():
    reply = Reply.calling(Call("judge", {"code": "v1"}, id="toolu_a"), Call("profile", id="toolu_b"),
                          text="Checking.")
    with AnthropicServer([reply, "done"]) as srv:
        backend = make(srv)
        first = backend.complete(with_tools())
        judged, profiled = first.tool_calls[0]
        second = backend.complete(with_tools(
            first.message(0), Message.tool_result(judged, "correct, 1.4x"),
            Message.tool_result(profiled, "no GPU here", is_error=True), Message("user", "now faster")))
    assert second.texts == ["done"]  # the server checks every tool_use is answered, results first
    assert srv.requests[1].body["messages"][1:] == [
        {"role": "assistant", "content": [
            text_block("Checking."),
            {"type": "tool_use", "id": "toolu_a", "name": "judge", "input": {"code": "v1"}},
            {"type": "tool_use", "id": "toolu_b", "name": "profile", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "correct, 1.4x"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no GPU here", "is_error": True},
            text_block("now faster"),
        ]},
    ]


def test_with_thinking_on_the_thinking_block_goes_back_ahead_of_its_tool_use():
    thought = thinking_block("the mask is off by one")
    reply = Reply(json=message_body([thought, tool_use_block(Call("judge", {"code": "v2"}), "toolu_t")],
                                    stop_reason="tool_use"))
    with AnthropicServer([reply, "done"]) as srv:
        backend = make(srv, thinking_budget_tokens=1024)
        first = backend.complete(with_tools())
        (call,) = first.tool_calls[0]
        assert first.texts == [""]
        backend.complete(with_tools(first.message(0), Message.tool_result(call, "correct")))
    assert srv.requests[1].body["messages"][1]["content"][0] == thought


def test_with_thinking_on_a_turn_rebuilt_without_its_thinking_is_refused_as_by_the_api():
    rebuilt = Message("assistant", "", tool_calls=(ToolCall("toolu_t", "judge", {"code": "v2"}),))
    with AnthropicServer(["never"]) as srv, pytest.raises(FatalLLMError, match="must start with a thinking block"):
        make(srv, thinking_budget_tokens=1024).complete(
            with_tools(rebuilt, Message.tool_result(rebuilt.tool_calls[0], "correct")))


def test_an_input_that_is_not_an_object_is_reported_as_invalid_arguments():
    with AnthropicServer([Reply.calling(Call("judge", "def add(): ...", id="toolu_a"))]) as srv:
        response = make(srv).complete(with_tools())
    assert response.tool_calls == [[ToolCall("toolu_a", "judge", {}, '"def add(): ..."')]]


def test_prompt_caching_marks_the_task_and_leaves_tool_results_alone():
    with AnthropicServer([Reply.calling(Call("profile", id="toolu_a")), "done"], cache=True) as srv:
        backend = make(srv, prompt_cache=True)
        first = backend.complete(with_tools())
        backend.complete(with_tools(first.message(0), Message.tool_result(first.tool_calls[0][0], "ok")))
    messages = srv.requests[1].body["messages"]
    assert messages[0]["content"] == [{"type": "text", "text": "write add", "cache_control": {"type": "ephemeral"}}]
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "ok"}]
