"""The tools generator's conversation, against a stand-in session that records what it is
asked: turns until the model answers without a call, the round's limits (calls, seconds)
refusing what comes after and forbidding tools for the answer, the note on the tools in the
system message, and its options checked."""

from __future__ import annotations

import pytest
from geak_agent_tools.generator import ToolsGenerator, ToolsOptions, with_tools_note
from geak_core.api.components import ToolOutcome
from geak_core.api.llm import ChatResponse, Message, ToolCall, ToolSpec

OPENING = [Message("system", "You write Triton."), Message("user", "Write add_kernel.")]
TOOLS = [ToolSpec(name, f"the {name} tool", {"type": "object", "properties": {}})
         for name in ("show_task", "judge", "tune")]


def calling(*names: str, text: str = "") -> ChatResponse:
    return ChatResponse([text], tool_calls=[[ToolCall(f"c{i}", name, {"code": "x"}) for i, name in enumerate(names)]])


class StandInSession:
    """Serves scripted replies; a call takes ``seconds`` each; records turns, calls, refusals."""

    def __init__(self, replies: list[ChatResponse], seconds: float = 1.0) -> None:
        self.tools = list(TOOLS)
        self.replies = list(replies)
        self.seconds = seconds
        self.asked: list[tuple[list[Message], str]] = []
        self.ran: list[str] = []
        self.refused: list[tuple[str, str]] = []

    def ask(self, messages, tool_choice="auto"):
        self.asked.append((list(messages), tool_choice))
        return self.replies.pop(0)

    def call(self, call):
        self.ran.append(call.name)
        return ToolOutcome(f"{call.name} done", is_error=call.name == "tune", seconds=self.seconds)

    def refuse(self, call, reason):
        self.refused.append((call.name, reason))
        return ToolOutcome(f"error: not run: {reason}", is_error=True)


def converse(session: StandInSession, **options) -> str:
    return ToolsGenerator(ToolsOptions(**options)).converse(None, list(OPENING), session)


def test_calls_are_run_and_answered_until_the_model_answers_without_one():
    session = StandInSession([calling("show_task"), calling("judge", "tune"), ChatResponse(["final answer"])])
    assert converse(session) == "final answer"
    assert session.ran == ["show_task", "judge", "tune"] and session.refused == []
    assert [choice for _, choice in session.asked] == ["auto", "auto", "auto"]
    last = session.asked[-1][0]
    assert [m.role for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool", "tool"]
    assert [m.tool_call_id for m in last if m.role == "tool"] == ["c0", "c0", "c1"]
    assert last[-1].is_error and last[-1].content == "tune done"  # an error result goes back as one


def test_once_the_rounds_calls_are_spent_the_rest_are_refused_and_tools_forbidden():
    session = StandInSession([calling("judge", "judge", "judge"), ChatResponse(["answer"])])
    assert converse(session, max_tool_calls=2) == "answer"
    assert session.ran == ["judge", "judge"]
    assert [name for name, _ in session.refused] == ["judge"]
    assert "this round's tools are spent (2 calls, 600 s)" in session.refused[0][1]
    assert [choice for _, choice in session.asked] == ["auto", "none"]


def test_the_rounds_seconds_bound_it_as_its_calls_do():
    session = StandInSession([calling("judge"), calling("judge", text="still calling"), ChatResponse(["unused"])],
                             seconds=40.0)
    assert converse(session, max_tool_seconds=30) == "still calling"  # calls in a turn without tools: not run
    assert session.ran == ["judge"] and [choice for _, choice in session.asked] == ["auto", "none"]


def test_the_system_message_names_the_tools_and_the_rounds_limits():
    session = StandInSession([ChatResponse(["answer"])])
    converse(session, max_tool_calls=3, max_tool_seconds=90)
    system = session.asked[0][0][0]
    assert system.content.startswith("You write Triton.\n\n## Tools\n")
    assert "`show_task`, `judge`, `tune`" in system.content
    assert "at most 3 tool calls and 90 s of tool time" in system.content
    assert session.asked[0][0][1:] == OPENING[1:]


def test_a_prompt_without_a_system_message_gets_one_for_the_note():
    messages = with_tools_note([Message("user", "fix it")], "## Tools")
    assert [(m.role, m.content) for m in messages] == [("system", "## Tools"), ("user", "fix it")]


@pytest.mark.parametrize(("options", "message"), [
    ({"max_tool_calls": 0}, "max_tool_calls must be at least 1"),
    ({"max_tool_seconds": 0}, "max_tool_seconds must be more than 0"),
])
def test_options_that_allow_no_tool_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        ToolsOptions(**options)


def test_the_generator_declares_that_it_needs_tool_calling():
    assert ToolsGenerator.needs_tool_calling is True
