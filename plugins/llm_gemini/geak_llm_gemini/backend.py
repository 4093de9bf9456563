"""Google Gemini ``generateContent`` over plain HTTP.

System messages become ``systemInstruction``; assistant turns use the role
``model``. Several samples are asked for with ``candidateCount``; a model that
refuses it (or returns fewer candidates) gets the missing samples as
concurrent single requests. A blocked prompt or a candidate stopped by a
safety filter is a ``FatalLLMError``: the same prompt would be blocked again.

Tools: a request's ``tools`` go out as ``tools: [{"functionDeclarations": [{name,
description, parametersJsonSchema}]}]`` (their parameters are JSON Schema, which
``parametersJsonSchema`` takes whole), with ``toolConfig.functionCallingConfig`` unless
``tool_choice`` is ``"auto"`` (mode ``NONE``; ``ANY``; ``ANY`` with ``allowedFunctionNames``
for a name). A candidate's ``functionCall`` parts come back as ``ToolCall``s (a call without
an ``id`` gets one made up, which is never sent back) and its parts as the turn's
``native``, which goes back unchanged: thought signatures must return with their calls.
The results of one turn's calls go in one ``user`` content of ``functionResponse`` parts,
``{"output": text}`` or, for an error, ``{"error": text}``.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from geak_core.api.components import LLMBackendBase
from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, Message, ToolCall, Usage
from geak_core.kit.llm_http import (
    HTTPFatalError,
    RetryPolicy,
    SampleBatch,
    SampleFanOut,
    SamplesRefused,
    check_http_options,
    default_key_requirement,
    keyed_client,
    merge_samples,
    price_for,
    resolve_api_key,
    same_host,
    token_count,
)

log = logging.getLogger(__name__)

PROVIDER = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_HOST = "generativelanguage.googleapis.com"
DEFAULT_KEY_ENV = "GEMINI_API_KEY"

# Finish reasons that mean the content was withheld, not merely cut short.
BLOCKING_FINISH_REASONS = frozenset({
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE",
})
_CANDIDATES_REFUSAL = re.compile(r"candidate[_ ]?count|multiple candidates", re.IGNORECASE)
MADE_UP_ID = "geak-call-"  # the prefix of the ids given to calls that came without one
_MODES = {"none": "NONE", "required": "ANY"}


def encode_contents(messages: list[Message]) -> list[dict[str, Any]]:
    """``contents`` of the request (system messages aside: ``systemInstruction``): plain turns
    as text parts, an assistant's calls as its ``native`` parts or as text and ``functionCall``
    parts, the results that follow as ``functionResponse`` parts of one ``user`` content (each
    named after the call it answers), with the text of a user turn right after them joined
    to it."""
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> function name, of the calls sent so far
    results: list[dict[str, Any]] | None = None  # the parts of the open content of results
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            if message.tool_call_id not in names:
                raise FatalLLMError(
                    f"{PROVIDER}: a tool result answers call {message.tool_call_id!r}, which no earlier "
                    "assistant message holds (Gemini needs the call's function name)",
                    provider=PROVIDER,
                )
            response = {"error" if message.is_error else "output": message.content}
            answer: dict[str, Any] = {"name": names[message.tool_call_id], "response": response}
            if not message.tool_call_id.startswith(MADE_UP_ID):
                answer["id"] = message.tool_call_id
            if results is None:
                results = []
                contents.append({"role": "user", "parts": results})
            results.append({"functionResponse": answer})
            continue
        if message.role == "user" and results is not None:
            results.append({"text": message.content})
        elif message.role == "assistant" and message.tool_calls:
            names.update((c.id, c.name) for c in message.tool_calls)
            contents.append({"role": "model", "parts": _model_parts(message)})
        else:
            role = "model" if message.role == "assistant" else "user"
            contents.append({"role": role, "parts": [{"text": message.content}]})
        results = None
    return contents


def _model_parts(message: Message) -> list[dict[str, Any]]:
    native = message.native or {}
    if native.get("provider") == PROVIDER and isinstance(native.get("parts"), list):
        return list(native["parts"])
    parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
    for call in message.tool_calls:
        function: dict[str, Any] = {"name": call.name, "args": call.arguments}
        if not call.id.startswith(MADE_UP_ID):
            function["id"] = call.id
        parts.append({"functionCall": function})
    return parts


def encode_tools(request: ChatRequest) -> dict[str, Any]:
    """``tools`` and ``toolConfig`` of a request that offers tools (nothing otherwise)."""
    if not request.tools:
        return {}
    fields: dict[str, Any] = {"tools": [{"functionDeclarations": [
        {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
        for t in request.tools
    ]}]}
    choice = request.tool_choice
    if choice != "auto":
        config: dict[str, Any] = {"mode": _MODES.get(choice, "ANY")}
        if choice not in _MODES:
            config["allowedFunctionNames"] = [choice]
        fields["toolConfig"] = {"functionCallingConfig": config}
    return fields


def decode_calls(parts: list[Any]) -> list[ToolCall]:
    """The ``functionCall`` parts of a candidate as ``ToolCall``s."""
    calls = []
    for part in parts:
        function = part.get("functionCall") if isinstance(part, dict) else None
        if not isinstance(function, dict):
            continue
        given = function.get("id")
        call_id = given if isinstance(given, str) and given else MADE_UP_ID + uuid.uuid4().hex[:12]
        calls.append(ToolCall.from_value(call_id, str(function.get("name") or ""), function.get("args")))
    return calls


@dataclass
class GeminiOptions:
    """Recipe keys of ``[llm] backend = "gemini"``."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    # None: GEMINI_API_KEY for generativelanguage.googleapis.com, no key anywhere else.
    api_key_env: str | None = field(default=None, metadata={"env": True})
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    thinking_budget: int | None = None  # tokens of thinking for 2.5 models (-1: dynamic)
    n_mode: str = field(default="auto", metadata={"choices": ["auto", "native", "concurrent"]})
    timeout_connect_s: float = 10.0
    timeout_read_s: float = 600.0
    max_retries: int = 6
    max_concurrency: int = 8
    price_per_mtok_input: float | None = None
    price_per_mtok_output: float | None = None

    def required_env(self) -> list[tuple[str, str]]:
        return default_key_requirement(self.base_url, self.api_key_env, DEFAULT_HOST, DEFAULT_KEY_ENV)

    def __post_init__(self) -> None:
        check_http_options(self)


class GeminiBackend(LLMBackendBase):
    """``LLMBackend`` for ``POST {base_url}/v1beta/models/{model}:generateContent``."""

    tool_calling = True

    def __init__(
        self,
        options: GeminiOptions,
        *,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.model = options.model.removeprefix("models/")
        self.url = f"{self.base_url}/v1beta/models/{quote(self.model, safe='.-_')}:generateContent"
        self.max_concurrency = options.max_concurrency
        key, env_name = resolve_api_key(
            PROVIDER,
            base_url=self.base_url,
            api_key_env=options.api_key_env,
            default_env=DEFAULT_KEY_ENV,
            default_host=DEFAULT_HOST,
        )
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["x-goog-api-key"] = key
        self.price = price_for(
            PROVIDER, self.model, options.price_per_mtok_input, options.price_per_mtok_output,
            use_table=same_host(self.base_url, DEFAULT_HOST),
        )
        self.client = keyed_client(
            PROVIDER,
            key,
            env_name,
            max_retries=options.max_retries,
            retry=retry,
            timeout_connect_s=options.timeout_connect_s,
            timeout_read_s=options.timeout_read_s,
            max_concurrency=options.max_concurrency,
            transport=transport,
        )
        self._fan_out = SampleFanOut(
            PROVIDER, options.n_mode, f"model {self.model}", "candidateCount", options.max_concurrency
        )

    # -- LLMBackend --------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"provider": PROVIDER, "base_url": self.base_url, "model": self.model}

    def complete(self, request: ChatRequest) -> ChatResponse:
        started = time.monotonic()
        batches = self._fan_out.collect(
            request.n,
            lambda k, first: self._send(self._payload(request, k, first)),
            lambda batch: len(batch.texts),
        )
        return merge_samples(batches, request.n, time.monotonic() - started, self.model, self.price)

    def close(self) -> None:
        self.client.close()

    # -- internals ---------------------------------------------------------

    def _payload(self, request: ChatRequest, n: int, sample_index: int) -> dict[str, Any]:
        opts = self.options
        system = [m.content for m in request.messages if m.role == "system"]
        body: dict[str, Any] = {"contents": encode_contents(request.messages), **encode_tools(request)}
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        config: dict[str, Any] = {}
        temperature = request.temperature if request.temperature is not None else opts.temperature
        top_p = request.top_p if request.top_p is not None else opts.top_p
        limit = request.max_tokens if request.max_tokens is not None else opts.max_output_tokens
        if n != 1:
            config["candidateCount"] = n
        if temperature is not None:
            config["temperature"] = temperature
        if top_p is not None:
            config["topP"] = top_p
        if limit is not None:
            config["maxOutputTokens"] = limit
        if request.seed is not None:  # the agent's, from [run] seed; split samples get seed + i
            config["seed"] = request.seed + sample_index
        if opts.thinking_budget is not None:
            config["thinkingConfig"] = {"thinkingBudget": opts.thinking_budget}
        if config:
            body["generationConfig"] = config
        return body

    def _send(self, body: dict[str, Any]) -> SampleBatch:
        try:
            reply = self.client.post_json(self.url, body, self._headers)
        except HTTPFatalError as error:
            count = body.get("generationConfig", {}).get("candidateCount")
            if error.status == 400 and count and _CANDIDATES_REFUSAL.search(error.detail.message):
                raise SamplesRefused(error.detail.message) from error
            raise
        return self._parse(reply.data)

    def _parse(self, data: Any) -> SampleBatch:
        if not isinstance(data, dict):
            raise FatalLLMError(
                f"{PROVIDER}: reply from {self.url} is not a JSON object: {str(data)[:200]}",
                provider=PROVIDER,
            )
        feedback = data.get("promptFeedback") if isinstance(data.get("promptFeedback"), dict) else {}
        if feedback.get("blockReason"):
            message = feedback.get("blockReasonMessage") or ""
            raise FatalLLMError(
                f"{PROVIDER}: model {self.model} blocked the prompt (blockReason "
                f"{feedback['blockReason']}{': ' + message if message else ''}); the same prompt "
                "would be blocked again",
                provider=PROVIDER,
            )
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            raise FatalLLMError(
                f"{PROVIDER}: reply from {self.url} has no candidates: {str(data)[:200]}",
                provider=PROVIDER,
            )
        candidates = sorted(
            (c for c in candidates if isinstance(c, dict)),
            key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0,
        )
        texts, reasons, calls, native = [], [], [], []
        for candidate in candidates:
            reason = str(candidate.get("finishReason") or "")
            content = candidate.get("content") if isinstance(candidate.get("content"), dict) else {}
            parts = content.get("parts") if isinstance(content.get("parts"), list) else []
            text = "".join(
                p["text"] for p in parts
                if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
            )
            if reason in BLOCKING_FINISH_REASONS:
                ratings = [
                    r.get("category") for r in candidate.get("safetyRatings", []) or []
                    if isinstance(r, dict) and r.get("blocked")
                ]
                raise FatalLLMError(
                    f"{PROVIDER}: model {self.model} stopped a candidate with finishReason {reason}"
                    + (f" ({', '.join(map(str, ratings))})" if ratings else "")
                    + "; the same prompt would be stopped again",
                    provider=PROVIDER,
                )
            called = decode_calls(parts)
            if not text and not called and reason != "MAX_TOKENS":
                raise FatalLLMError(
                    f"{PROVIDER}: model {self.model} returned an empty candidate "
                    f"(finishReason {reason or 'missing'})",
                    provider=PROVIDER,
                )
            texts.append(text)
            reasons.append(reason)
            calls.append(called)
            native.append({"provider": PROVIDER, "parts": parts} if called else None)
        meta = data.get("usageMetadata") if isinstance(data.get("usageMetadata"), dict) else {}
        completion = token_count(meta.get("candidatesTokenCount")) + token_count(meta.get("thoughtsTokenCount"))
        return SampleBatch(
            texts=texts,
            finish_reasons=reasons,
            usage=Usage(token_count(meta.get("promptTokenCount")), completion),
            model=str(data.get("modelVersion") or self.model),
            raw=data,
            tool_calls=calls,
            native=native,
        )


def build(options: GeminiOptions) -> GeminiBackend:
    if options is None:
        raise InputError("gemini backend needs options ([llm] model = ...)")
    return GeminiBackend(options)
