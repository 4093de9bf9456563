"""Tool calling of the openai backend, end to end against a Chat Completions server on 127.0.0.1."""

from __future__ import annotations

import pytest
from geak_core.api.llm import ChatRequest, FatalLLMError, Message, ToolCall
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_openai.backend import OpenAIBackend, OpenAIOptions

from tests.support.llm_calls import JUDGE, Sleeps, with_tools
from tests.support.openai_server import Call, OpenAIServer, Reply


def make(srv: OpenAIServer) -> OpenAIBackend:
    return OpenAIBackend(OpenAIOptions(model="test-model", base_url=srv.base_url, max_retries=1),
                         retry=RetryPolicy(sleep=Sleeps()))


def test_the_backend_declares_tool_calling():
    assert OpenAIBackend.tool_calling is True


def test_tools_go_out_as_function_tools_and_the_default_choice_is_left_to_the_api():
    with OpenAIServer(["ok"]) as srv:
        make(srv).complete(with_tools())
    body = srv.requests[0].body
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "judge", "description": JUDGE.description, "parameters": JUDGE.parameters}}
    assert [t["function"]["name"] for t in body["tools"]] == ["judge", "profile"]
    assert "tool_choice" not in body


@pytest.mark.parametrize(("choice", "sent"), [
    ("none", "none"),
    ("required", "required"),
    ("judge", {"type": "function", "function": {"name": "judge"}}),
])
def test_a_tool_choice_is_sent_in_the_apis_form(choice, sent):
    with OpenAIServer(["ok"]) as srv:
        make(srv).complete(with_tools(tool_choice=choice))
    assert srv.requests[0].body["tool_choice"] == sent


def test_a_request_without_tools_sends_no_tool_fields():
    with OpenAIServer(["ok"]) as srv:
        response = make(srv).complete(ChatRequest([Message("user", "hi")]))
    assert {"tools", "tool_choice"}.isdisjoint(srv.requests[0].body)
    assert response.tool_calls == [[]] and response.native == [None]


def test_tool_calls_in_the_reply_are_decoded_with_their_ids_and_arguments():
    reply = Reply.calling(Call("judge", {"code": "def add(): ..."}, id="call_a"), Call("profile", id="call_b"),
                          text="let me check")
    with OpenAIServer([reply]) as srv:
        response = make(srv).complete(with_tools())
    assert response.tool_calls == [[ToolCall("call_a", "judge", {"code": "def add(): ..."}),
                                     ToolCall("call_b", "profile", {})]]
    assert response.texts == ["let me check"]
    assert response.finish_reasons == ["tool_calls"]


def test_the_follow_up_sends_the_assistants_calls_then_one_tool_message_per_result():
    reply = Reply.calling(Call("judge", {"code": "v1"}, id="call_a"), Call("profile", id="call_b"))
    with OpenAIServer([reply, "done"]) as srv:
        backend = make(srv)
        first = backend.complete(with_tools())
        judged, profiled = first.tool_calls[0]
        second = backend.complete(with_tools(first.message(0), Message.tool_result(judged, "correct, 1.4x"),
                                             Message.tool_result(profiled, "no kernel yet", is_error=True)))
    assert second.texts == ["done"]  # the server checks that every call is answered
    assert srv.requests[1].body["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "judge", "arguments": '{"code": "v1"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "profile", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "correct, 1.4x"},
        {"role": "tool", "tool_call_id": "call_b", "content": "no kernel yet"},
    ]


def test_arguments_that_are_not_a_json_object_are_kept_as_written_and_sent_back_so():
    broken = '{"code": "def add(): ...'
    with OpenAIServer([Reply.calling(Call("judge", broken, id="call_a"), Call("judge", "[1, 2]", id="call_b")),
                       "ok"]) as srv:
        backend = make(srv)
        first = backend.complete(with_tools())
        calls = first.tool_calls[0]
        assert calls == [ToolCall("call_a", "judge", {}, broken), ToolCall("call_b", "judge", {}, "[1, 2]")]
        backend.complete(with_tools(first.message(0), *(Message.tool_result(c, "invalid arguments", is_error=True)
                                                        for c in calls)))
    sent = srv.requests[1].body["messages"][2]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == [broken, "[1, 2]"]


def test_a_call_without_an_id_gets_one_the_results_can_name():
    reply = Reply(json={"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "profile", "arguments": ""}}]}}]})
    with OpenAIServer([reply]) as srv:
        response = make(srv).complete(with_tools())
    assert response.tool_calls == [[ToolCall("call_0_0", "profile", {})]]


def test_a_server_that_refuses_tools_is_a_fatal_error_not_a_silent_retry_without_them():
    with OpenAIServer(["never"], reject_params=["tools"]) as srv, pytest.raises(FatalLLMError, match="tools"):
        make(srv).complete(with_tools())
    assert len(srv.requests) == 1


def test_a_tool_result_without_its_call_is_refused_by_the_server_as_by_the_api():
    orphan = Message.tool_result(ToolCall("call_x", "judge"), "correct")
    with OpenAIServer(["never"]) as srv, pytest.raises(FatalLLMError, match="preceding message with 'tool_calls'"):
        make(srv).complete(with_tools(orphan))
