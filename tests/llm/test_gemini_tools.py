"""Function calling of the gemini backend, end to end against a generateContent server on 127.0.0.1."""

from __future__ import annotations

import pytest
from geak_core.api.llm import FatalLLMError, Message, ToolCall
from geak_core.kit.llm_http import RetryPolicy
from geak_llm_gemini.backend import MADE_UP_ID, GeminiBackend, GeminiOptions

from tests.support.gemini_server import GeminiServer
from tests.support.llm_calls import JUDGE, Sleeps, with_tools
from tests.support.openai_server import Call, Reply


def make(srv: GeminiServer) -> GeminiBackend:
    return GeminiBackend(GeminiOptions(model="gemini-test", base_url=srv.base_url, max_retries=1),
                         retry=RetryPolicy(sleep=Sleeps()))


def test_the_backend_declares_tool_calling():
    assert GeminiBackend.tool_calling is True


def test_tools_go_out_as_function_declarations_with_their_json_schema():
    with GeminiServer(["ok"]) as srv:
        make(srv).complete(with_tools())
    body = srv.requests[0].body
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "judge", "description": JUDGE.description, "parametersJsonSchema": JUDGE.parameters},
        {"name": "profile", "description": "Profile the last correct kernel.",
         "parametersJsonSchema": {"type": "object", "properties": {}}},
    ]}]
    assert "toolConfig" not in body


@pytest.mark.parametrize(("choice", "config"), [
    ("none", {"mode": "NONE"}),
    ("required", {"mode": "ANY"}),
    ("judge", {"mode": "ANY", "allowedFunctionNames": ["judge"]}),
])
def test_a_tool_choice_is_sent_as_the_function_calling_mode(choice, config):
    with GeminiServer(["ok"]) as srv:
        make(srv).complete(with_tools(tool_choice=choice))
    assert srv.requests[0].body["toolConfig"] == {"functionCallingConfig": config}


def test_function_calls_are_decoded_and_a_call_without_an_id_gets_a_made_up_one():
    reply = Reply.calling(Call("judge", {"code": "v1"}, id="fc-1"), Call("profile"))
    with GeminiServer([reply]) as srv:
        response = make(srv).complete(with_tools())
    judged, profiled = response.tool_calls[0]
    assert judged == ToolCall("fc-1", "judge", {"code": "v1"})
    assert (profiled.name, profiled.arguments, profiled.id.startswith(MADE_UP_ID)) == ("profile", {}, True)
    assert response.texts == [""]  # a candidate of calls alone is no empty reply
    assert response.native == [{"provider": "gemini", "parts": response.raw[0]["candidates"][0]["content"]["parts"]}]


def test_the_follow_up_returns_the_parts_with_their_signature_then_the_results_in_one_user_content():
    reply = Reply.calling(Call("judge", {"code": "v1"}, id="fc-1", signature="c2lnLTE="), Call("profile"),
                          text="Checking.")
    with GeminiServer([reply, "done"]) as srv:
        backend = make(srv)
        first = backend.complete(with_tools())
        judged, profiled = first.tool_calls[0]
        second = backend.complete(with_tools(
            first.message(0), Message.tool_result(judged, "correct, 1.4x"),
            Message.tool_result(profiled, "no GPU here", is_error=True), Message("user", "now faster")))
    assert second.texts == ["done"]  # the server checks the signature and that every call is answered
    assert srv.requests[1].body["contents"][1:] == [
        {"role": "model", "parts": [
            {"text": "Checking."},
            {"functionCall": {"name": "judge", "args": {"code": "v1"}, "id": "fc-1"}, "thoughtSignature": "c2lnLTE="},
            {"functionCall": {"name": "profile", "args": {}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "judge", "response": {"output": "correct, 1.4x"}, "id": "fc-1"}},
            {"functionResponse": {"name": "profile", "response": {"error": "no GPU here"}}},
            {"text": "now faster"},
        ]},
    ]


def test_a_call_rebuilt_without_its_thought_signature_is_refused_as_by_gemini_3():
    with GeminiServer([Reply.calling(Call("judge", {"code": "v1"}, signature="c2lnLTE=")), "never"]) as srv:
        backend = make(srv)
        first = backend.complete(with_tools())
        (call,) = first.tool_calls[0]
        rebuilt = Message("assistant", "", tool_calls=(call,))
        with pytest.raises(FatalLLMError, match="thought_signature"):
            backend.complete(with_tools(rebuilt, Message.tool_result(call, "correct")))
    assert srv.requests[1].body["contents"][1] == {"role": "model", "parts": [
        {"functionCall": {"name": "judge", "args": {"code": "v1"}}}]}  # the made-up id is not sent


def test_a_result_for_a_call_no_assistant_turn_holds_is_a_fatal_error_before_any_request():
    orphan = Message.tool_result(ToolCall("fc-9", "judge"), "correct")
    with GeminiServer(["never"]) as srv, pytest.raises(FatalLLMError, match="fc-9"):
        make(srv).complete(with_tools(orphan))
    assert srv.requests == []


def test_args_that_are_not_an_object_are_reported_as_invalid_arguments():
    with GeminiServer([Reply.calling(Call("judge", "def add(): ...", id="fc-1"))]) as srv:
        response = make(srv).complete(with_tools())
    assert response.tool_calls == [[ToolCall("fc-1", "judge", {}, '"def add(): ..."')]]
