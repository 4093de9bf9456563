"""What the HTTP backends' tests share: an injected sleep that records the retry waits, a
multi-turn conversation (system, user, assistant, user), and the tools of tool-calling tests."""

from __future__ import annotations

from geak_core.api.llm import ChatRequest, Message, ToolSpec


class Sleeps(list):
    """An injected sleep that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def conversation(**fields) -> ChatRequest:
    """A system prompt and three turns, the last the user's: what a fix or optimise round sends."""
    messages = [
        Message("system", "you write Triton"),
        Message("user", "write add"),
        Message("assistant", "def add(): ..."),
        Message("user", "now faster"),
    ]
    return ChatRequest(messages, **fields)


JUDGE = ToolSpec(
    "judge", "Judge a kernel against the task's reference: correctness, then speed.",
    {"type": "object", "properties": {"code": {"type": "string", "description": "the module"}},
     "required": ["code"], "additionalProperties": False},
)
PROFILE = ToolSpec("profile", "Profile the last correct kernel.", {"type": "object", "properties": {}})


def with_tools(*extra: Message, **fields) -> ChatRequest:
    """A system prompt and a task, then ``extra`` turns, offering ``judge`` and ``profile``."""
    messages = [Message("system", "you write Triton"), Message("user", "write add"), *extra]
    return ChatRequest(messages, tools=[JUDGE, PROFILE], **fields)
