"""What the HTTP backends' tests share: an injected sleep that records the retry waits, and a
multi-turn conversation (system, user, assistant, user)."""

from __future__ import annotations

from geak_core.api.llm import ChatRequest, Message


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
