"""A scriptable Anthropic Messages API server on 127.0.0.1, for tests.

Same script format as ``openai_server`` (a list or a callable; items are a ``str``, a
``list[str]`` whose first text is the answer, or a ``Reply``), served at
``POST /v1/messages``::

    from tests.support.anthropic_server import AnthropicServer, anthropic_error

    with AnthropicServer(["a reply"], api_key="k") as srv:
        options = AnthropicOptions(model="claude-test", base_url=srv.base_url, api_key_env="MY_KEY")

It checks requests as the API does, answering 400 ``invalid_request_error`` to a body
without ``model``, ``messages`` or an integer ``max_tokens``, with ``n`` or ``stream``
true, with thinking whose ``budget_tokens`` is under 1024 or not below ``max_tokens``, or
with thinking and a temperature other than 1; a missing ``anthropic-version`` header is a
400 too. Usage counts words, as in ``openai_server``: the prompt is every text of
``system`` and ``messages``, the output the answer's words. ``Reply.usage`` replaces the
whole ``usage`` object (Anthropic's names: ``input_tokens``, ``output_tokens``,
``cache_creation_input_tokens``, ``cache_read_input_tokens``). A ``Reply(json=...)`` of
``message_body(blocks)`` sends those content blocks (thinking ones, say), with the usage
counted unless given; any other JSON (errors, odd shapes) is sent as it is.
``srv.usages`` lists the usage of every message sent. ``Reply.calling(Call(...), text=...)``
sends ``tool_use`` blocks (after a text block when ``text`` is set) with ``stop_reason``
``tool_use``; ``tool_use_block`` builds one for a ``message_body`` of its own (after a
thinking block, say).

Tool use is checked as the API checks it: ``tools`` need a ``name`` and an object
``input_schema``; ``tool_choice`` is ``auto``, ``any``, ``none`` or ``tool`` with a name, and
only ``auto`` or ``none`` with thinking on; the user message after an assistant's
``tool_use`` blocks answers every one of them with ``tool_result`` blocks, which come before
any text; with thinking on, the last assistant message, when it holds ``tool_use`` blocks,
must start with its ``thinking`` (or ``redacted_thinking``) block.

Switches: ``api_key`` (a missing or different ``x-api-key`` gets a 401
``authentication_error``); ``cache`` (prompt caching: the words of the prefix up to each
``cache_control`` breakpoint are written to the cache on first sight and read from it
afterwards; the longest cached prefix counts as read, the rest as input).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from tests.support.openai_server import (
    Call,
    RecordedRequest,
    Reply,
    ScriptedServer,
    ScriptItem,
    as_reply,
    words,
)

ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}


def anthropic_error(
    status: int, message: str, *, type: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """An Anthropic-shaped error body: ``{"type": "error", "error": {"type", "message"}}``."""
    error = {"type": type or ERROR_TYPES.get(status, "api_error"), "message": message}
    return Reply(status=status, json={"type": "error", "error": error, "request_id": "req_test"},
                 headers=dict(headers or {}))


def message_body(
    blocks: list[dict[str, Any]],
    *,
    usage: dict[str, Any] | None = None,
    model: str = "claude-test",
    stop_reason: str = "end_turn",
) -> dict[str, Any]:
    """A Messages API reply holding ``blocks`` as its content; without ``usage`` the server
    counts it (the output: the words of every text and thinking block)."""
    body = {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": blocks, "stop_reason": stop_reason, "stop_sequence": None,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(call: Call, default_id: str) -> dict[str, Any]:
    """A ``tool_use`` block of ``call`` (its id, or ``default_id``)."""
    return {"type": "tool_use", "id": call.id or default_id, "name": call.name, "input": call.arguments}


def thinking_block(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": "sig-" + str(len(thinking))}


def _texts(content: Any) -> list[str]:
    """The texts of a ``system`` or message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    return []


class AnthropicServer(ScriptedServer):
    """Serves ``/v1/messages``; ``base_url`` is the root URL."""

    def __init__(
        self,
        replies: Iterable[ScriptItem] | Callable[[RecordedRequest], ScriptItem] | None = None,
        *,
        api_key: str | None = None,
        cache: bool = False,
    ) -> None:
        super().__init__(replies)
        self.api_key = api_key
        self.cache = cache
        self.cached: set[str] = set()
        self.usages: list[dict[str, int]] = []  # the usage of every successful reply, in order

    @property
    def base_url(self) -> str:
        return self.root_url

    def respond(self, record: RecordedRequest) -> tuple[int, dict[str, str], bytes, float]:
        if record.path != "/v1/messages":
            return self.refuse(anthropic_error(404, f"Not found: {record.path}"))
        if self.api_key is not None and record.headers.get("x-api-key") != self.api_key:
            return self.refuse(anthropic_error(401, "invalid x-api-key"))
        if not record.headers.get("anthropic-version"):
            return self.refuse(anthropic_error(400, "anthropic-version: header is required"))
        body = record.body
        problem = self._invalid(body)
        if problem:
            return self.refuse(anthropic_error(400, problem))
        item = self.next_item(record)
        if item is None:
            return self.refuse(anthropic_error(400, f"no scripted reply left for request #{len(self.requests)}"))
        reply = as_reply(item, 1)
        delay = reply.delay_s
        if reply.then is not None:
            reply = as_reply(reply.then, 1)
        if reply.status != 200 or reply.body is not None:
            return (*self.encode(reply, None), delay)
        if reply.json is not None and not (isinstance(reply.json, dict) and reply.json.get("type") == "message"):
            return (*self.encode(reply, None), delay)  # an error or an odd shape, as scripted
        if reply.json is not None:
            payload = dict(reply.json)
            said = " ".join(
                str(b.get("text") or b.get("thinking") or "") for b in payload.get("content", [])
                if isinstance(b, dict)
            )
            payload.setdefault("usage", self._usage(body, said))
        elif reply.calls:
            text = (reply.texts or [""])[0]
            blocks = ([text_block(text)] if text else []) + [
                tool_use_block(call, f"toolu_{len(self.requests)}_{k}") for k, call in enumerate(reply.calls)
            ]
            payload = message_body(blocks, usage=reply.usage or self._usage(body, text),
                                   model=str(body["model"]), stop_reason=reply.finish_reason or "tool_use")
        else:
            text = (reply.texts or [""])[0]
            payload = message_body([text_block(text)], usage=reply.usage or self._usage(body, text),
                                   model=str(body["model"]), stop_reason=reply.finish_reason or "end_turn")
        with self._lock:
            self.usages.append(dict(payload["usage"]))
        return (*self.encode(Reply(status=200, headers=reply.headers), payload), delay)

    @staticmethod
    def _invalid(body: Any) -> str:
        """What the API would refuse in ``body`` ("" when nothing)."""
        if not isinstance(body, dict):
            return "request body must be a JSON object"
        for name in ("model", "messages", "max_tokens"):
            if name not in body:
                return f"{name}: Field required"
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return "max_tokens: Input should be a valid integer greater than 0"
        if not isinstance(body["messages"], list) or not body["messages"]:
            return "messages: at least one message is required"
        for extra in ("n", "candidateCount"):
            if extra in body:
                return f"{extra}: Extra inputs are not permitted"
        if body.get("stream"):
            return "this server does not stream"
        thinking = body.get("thinking")
        if thinking is not None:
            budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
            if not isinstance(budget, int) or budget < 1024:
                return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            if budget >= body["max_tokens"]:
                return "`max_tokens` must be greater than `thinking.budget_tokens`"
            if body.get("temperature", 1) != 1:
                return "`temperature` may only be set to 1 when thinking is enabled"
        return AnthropicServer._tool_problem(body)

    @staticmethod
    def _tool_problem(body: dict[str, Any]) -> str:
        """What the API refuses in a request's tools, tool choice and tool turns ("" when nothing)."""
        tools = body.get("tools", [])
        if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str)
            and isinstance(t.get("input_schema"), dict) and t["input_schema"].get("type") == "object"
            for t in tools
        ):
            return "tools: each tool needs a name and an input_schema of type object"
        thinking = body.get("thinking") is not None
        choice = body.get("tool_choice")
        if choice is not None:
            kind = choice.get("type") if isinstance(choice, dict) else None
            if kind not in ("auto", "any", "tool", "none") or (kind == "tool" and not choice.get("name")):
                return f"tool_choice: invalid value {choice!r}"
            if not tools:
                return "tool_choice may only be specified while providing tools"
            if thinking and kind not in ("auto", "none"):
                return "Thinking may not be enabled when tool_choice forces tool use."
        pending: list[str] = []  # the tool_use ids of the assistant message just before
        last = max((i for i, m in enumerate(body["messages"]) if m.get("role") == "assistant"), default=-1)
        for i, message in enumerate(body["messages"]):
            blocks = message.get("content") if isinstance(message.get("content"), list) else []
            kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
            if message.get("role") == "user":
                answered = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
                if "tool_result" in kinds and "text" in kinds[: kinds.index("tool_result")]:
                    return f"messages.{i}: tool_result blocks must come before any text"
                stray = [a for a in answered if a not in pending]
                if stray:
                    return (f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{', '.join(map(str, stray))}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message.")
                missing = [p for p in pending if p not in answered]
                if missing:
                    return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                            f"after: {', '.join(missing)}")
                pending = []
            elif message.get("role") == "assistant":
                pending = [str(b.get("id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
                if i == last and pending and thinking and kinds[0] not in ("thinking", "redacted_thinking"):
                    return (f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                            f"`{kinds[0]}`. When `thinking` is enabled, a final `assistant` message must start "
                            "with a thinking block.")
        return ""

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, int]:
        """Word counts, with the prompt cache simulated when ``cache`` is on."""
        pieces: list[tuple[int, bool]] = []  # (words of a block, breakpoint after it)
        for block in self._blocks(body.get("system")):
            pieces.append((words(str(block.get("text", ""))), "cache_control" in block))
        for message in body["messages"]:
            for block in self._blocks(message.get("content")):
                pieces.append((words(str(block.get("text", ""))), "cache_control" in block))
        total = sum(count for count, _ in pieces)
        written = read = 0
        if self.cache:
            for end, (_, breakpoint) in enumerate(pieces):
                if not breakpoint:
                    continue
                prefix = self._prefix_key(body, end)
                size = sum(count for count, _ in pieces[: end + 1])
                with self._lock:
                    seen = prefix in self.cached
                    self.cached.add(prefix)
                if seen:
                    read, written = size, 0  # a longer cached prefix replaces a shorter one
                else:
                    written = size - read
        return {
            "input_tokens": total - written - read,
            "output_tokens": words(text),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    @staticmethod
    def _blocks(content: Any) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

    def _prefix_key(self, body: dict[str, Any], end: int) -> str:
        """The model and the texts of the first ``end + 1`` blocks, as one string."""
        texts = [("system", t) for t in _texts(body.get("system"))]
        for message in body["messages"]:
            texts += [(str(message.get("role")), t) for t in _texts(message.get("content"))]
        return json.dumps([body["model"], texts[: end + 1]])
