"""Types shared by every LLM backend: requests, responses, usage, errors, tool calls.

Tool calling: a request may offer the model tools (``ChatRequest.tools``, each a
``ToolSpec``); a reply's completions may then ask for calls (``ChatResponse.tool_calls``,
each a ``ToolCall``). The caller runs them and sends the conversation again with the
assistant's turn (``ChatResponse.message(i)``) and one ``"tool"`` message per result
(``Message.tool_result(call, text)``). A backend that can do this declares it
(``LLMBackendBase.tool_calling``). Requests and replies without tools are recorded, keyed
and replayed exactly as before tools existed: every tool field is left out of their dicts
and keys while it is empty.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

# A name every provider accepts: OpenAI and Anthropic allow [A-Za-z0-9_-]{1,64}, Gemini
# wants a letter or an underscore first.
TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
TOOL_CHOICES = ("auto", "none", "required")


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call, as the model is told of it.

    ``parameters`` is a JSON Schema of the arguments, an object
    (``{"type": "object", "properties": {...}, "required": [...]}``); ``name`` is a letter
    or an underscore, then up to 63 letters, digits, ``_`` or ``-`` (what every provider
    accepts).
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must be a letter or '_', then up to 63 letters, "
                             "digits, '_' or '-'")
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON Schema of type 'object', "
                             f"got {self.parameters!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolSpec:
        return cls(data["name"], data.get("description", ""), data["parameters"])


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for.

    ``id`` pairs the call with its result (``Message.tool_result``); providers that give
    none (Gemini may not) get one made up by the backend. ``arguments`` are the call's
    arguments, decoded. When the model wrote arguments that are not a JSON object,
    ``arguments`` is empty and ``invalid_arguments`` holds the text as written, so that the
    caller can tell the model what was wrong instead of running the call.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    invalid_arguments: str | None = None

    @classmethod
    def from_text(cls, id: str, name: str, text: Any) -> ToolCall:
        """The call whose arguments a provider sent as JSON text (OpenAI); no text, or blank
        text, is a call without arguments."""
        if text is None or (isinstance(text, str) and not text.strip()):
            return cls(id, name)
        if not isinstance(text, str):
            return cls.from_value(id, name, text)
        try:
            decoded = json.loads(text)
        except ValueError:
            return cls(id, name, invalid_arguments=text)
        return cls(id, name, decoded) if isinstance(decoded, dict) else cls(id, name, invalid_arguments=text)

    @classmethod
    def from_value(cls, id: str, name: str, value: Any) -> ToolCall:
        """The call whose arguments a provider sent as a JSON value (Anthropic, Gemini): an
        object, or nothing for a call without arguments; any other value is written out as
        ``invalid_arguments``."""
        if value is None:
            return cls(id, name)
        if isinstance(value, dict):
            return cls(id, name, value)
        return cls(id, name, invalid_arguments=json.dumps(value))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.invalid_arguments is not None:
            data["invalid_arguments"] = self.invalid_arguments
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(data["id"], data["name"], dict(data.get("arguments") or {}), data.get("invalid_arguments"))


@dataclass(frozen=True)
class Message:
    """One turn of a conversation.

    ``role`` is ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``. An assistant turn
    may carry the calls the model asked for (``tool_calls``; ``content`` is then whatever it
    said beside them, often nothing). A ``"tool"`` turn is the result of one call:
    ``tool_call_id`` names the call, ``content`` is the result, ``is_error`` says that the
    call failed (sent as Anthropic's ``is_error`` and Gemini's ``error`` key; OpenAI has no
    such flag, so the content must say it). ``native`` is an assistant turn as its provider
    returned it (``{"provider": "anthropic", "content": [...]}``, ``{"provider": "gemini",
    "parts": [...]}``): a backend of that provider sends it back as it came, since thinking
    blocks and thought signatures must return with the calls they led to; other backends
    ignore it. ``ChatResponse.message`` fills it.
    """

    role: str  # "system" | "user" | "assistant" | "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    is_error: bool = False
    native: dict[str, Any] | None = None

    @classmethod
    def tool_result(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        """The ``"tool"`` turn answering ``call``."""
        return cls("tool", content, tool_call_id=call.id, is_error=is_error)

    def to_dict(self) -> dict[str, Any]:
        """``role`` and ``content``, and the tool fields that are set."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id:
            data["tool_call_id"] = self.tool_call_id
        if self.is_error:
            data["is_error"] = True
        if self.native is not None:
            data["native"] = self.native
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            data["role"], data["content"],
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id", ""),
            is_error=bool(data.get("is_error", False)),
            native=data.get("native"),
        )

    def canonical(self) -> list[Any]:
        """``[role, content]``, with the tool fields that are set as a third item."""
        extra = {k: v for k, v in self.to_dict().items() if k not in ("role", "content")}
        return [self.role, self.content, extra] if extra else [self.role, self.content]


@dataclass
class ChatRequest:
    """One request for ``n`` completions.

    Sampling fields left as ``None`` take the backend's configured defaults.
    ``meta`` describes where the request comes from (task, lineage, iteration,
    purpose); it is recorded but is not part of the request's identity.
    ``tools`` are offered to the model; ``tool_choice`` says whether it must call one:
    ``"auto"`` (it chooses), ``"none"`` (it may not), ``"required"`` (at least one) or the
    name of one of ``tools`` (that one). A backend that cannot call tools
    (``LLMBackendBase.tool_calling``) must not be given any.
    """

    messages: list[Message]
    n: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: str = "auto"

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must differ, got {names}")
        if self.tool_choice not in TOOL_CHOICES and self.tool_choice not in names:
            raise ValueError(f"tool_choice {self.tool_choice!r} must be one of {', '.join(TOOL_CHOICES)} "
                             f"or the name of a tool offered ({', '.join(names) or 'none'})")
        if self.tool_choice != "auto" and not self.tools:
            raise ValueError(f"tool_choice {self.tool_choice!r} needs tools")

    def canonical(self, identity: dict[str, Any], sample_index: int | None = None) -> dict[str, Any]:
        """The fields that define this request's answer, in a stable form."""
        data = {
            "identity": identity,
            "messages": [m.canonical() for m in self.messages],
            "n": self.n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "sample_index": sample_index,
        }
        if self.tools:
            data["tools"] = [t.to_dict() for t in self.tools]
            data["tool_choice"] = self.tool_choice
        return data

    def key(self, identity: dict[str, Any], sample_index: int | None = None) -> str:
        blob = json.dumps(self.canonical(identity, sample_index), sort_keys=True)
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["messages"] = [m.to_dict() for m in self.messages]
        if self.tools:
            data["tools"] = [t.to_dict() for t in self.tools]
        else:
            del data["tools"], data["tool_choice"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatRequest:
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["messages"] = [Message.from_dict(m) for m in data.get("messages", [])]
        kwargs["tools"] = [ToolSpec.from_dict(t) for t in data.get("tools") or ()]
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
    """The completions for one request, with what they cost.

    ``tool_calls[i]`` are the calls completion ``i`` asked for (empty: none; then ``texts[i]``
    is its answer), and ``native[i]`` what its provider needs back of it
    (``Message.native``); both have one item per completion.
    """

    texts: list[str]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cost_usd: float | None = None
    raw: Any = None  # the provider's decoded body(ies), for the run store
    finish_reasons: list[str] = field(default_factory=list)
    tool_calls: list[list[ToolCall]] = field(default_factory=list)
    native: list[dict[str, Any] | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        count = len(self.texts)
        self.tool_calls = self.tool_calls or [[] for _ in range(count)]
        self.native = self.native or [None] * count
        if len(self.tool_calls) != count or len(self.native) != count:
            raise ValueError(f"a response of {count} completions has {len(self.tool_calls)} lists of tool "
                             f"calls and {len(self.native)} native turns; it needs one of each per completion")

    def message(self, index: int = 0) -> Message:
        """Completion ``index`` as the assistant's turn, to send back with the tools' results."""
        return Message("assistant", self.texts[index], tool_calls=tuple(self.tool_calls[index]),
                       native=self.native[index])

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["usage"]["total_tokens"] = self.usage.total_tokens
        if any(self.tool_calls):
            data["tool_calls"] = [[c.to_dict() for c in calls] for calls in self.tool_calls]
        else:
            del data["tool_calls"]
        if not any(n is not None for n in self.native):
            del data["native"]
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
            tool_calls=[[ToolCall.from_dict(c) for c in calls] for calls in data.get("tool_calls") or ()],
            native=list(data.get("native") or ()),
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
