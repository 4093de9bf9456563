"""Types shared by every LLM backend: requests, responses, usage, errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass
class ChatRequest:
    """One request for ``n`` completions.

    Sampling fields left as ``None`` take the backend's configured defaults.
    ``meta`` describes where the request comes from (task, lineage, iteration,
    purpose); it is recorded but is not part of the request's identity.
    """

    messages: list[Message]
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def canonical(self, identity: dict[str, Any], sample_index: int | None = None) -> dict[str, Any]:
        """The fields that define this request's answer, in a stable form."""
        return {
            "identity": identity,
            "messages": [[m.role, m.content] for m in self.messages],
            "n": self.n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "sample_index": sample_index,
        }

    def key(self, identity: dict[str, Any], sample_index: int | None = None) -> str:
        blob = json.dumps(self.canonical(identity, sample_index), sort_keys=True)
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["messages"] = [dataclasses.asdict(m) for m in self.messages]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatRequest:
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["messages"] = [Message(**m) for m in data.get("messages", [])]
        return cls(**kwargs)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class ChatResponse:
    """The completions for one request, with what they cost."""

    texts: list[str]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cost_usd: float | None = None
    raw: Any = None  # the provider's decoded body(ies), for the run store
    finish_reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["usage"]["total_tokens"] = self.usage.total_tokens
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatResponse:
        usage = data.get("usage") or {}
        return cls(
            texts=list(data.get("texts", [])),
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            model=data.get("model", ""),
            latency_s=data.get("latency_s", 0.0),
            cost_usd=data.get("cost_usd"),
            raw=data.get("raw"),
            finish_reasons=list(data.get("finish_reasons", [])),
        )


class LLMError(Exception):
    """A backend failed. ``retryable`` says whether trying again can help."""

    retryable = False

    def __init__(self, message: str, *, status: int | None = None, provider: str = ""):
        super().__init__(message)
        self.status = status
        self.provider = provider


class RetryableLLMError(LLMError):
    """Rate limits, overload, timeouts, connection failures."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        retry_after_s: float | None = None,
    ):
        super().__init__(message, status=status, provider=provider)
        self.retry_after_s = retry_after_s


class FatalLLMError(LLMError):
    """Errors that cannot succeed on retry: bad key, exhausted quota, invalid request.

    The run stops with this message; everything recorded so far is kept.
    """


class NoCodeError(LLMError):
    """A reply that holds no usable code (counts as a failed attempt, not a crash)."""
