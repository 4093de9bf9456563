"""OpenAI Chat Completions over plain HTTP, for api.openai.com and compatible servers.

Compatible servers (vLLM, SGLang, Ollama, llama.cpp, proxies) differ in what
they accept, so the backend adapts instead of failing: a 400 that names an
unsupported parameter is retried once without it (or with the other name of
the token limit) and the adjustment is remembered; a server that refuses
``n > 1`` or returns fewer choices gets the missing samples as concurrent
single requests.

Tools: a request's ``tools`` go out as ``tools`` of ``{"type": "function", "function":
{name, description, parameters}}`` (and ``tool_choice`` unless it is ``"auto"``, the API's
default); a reply's ``message.tool_calls`` come back as ``ToolCall``s, their ``arguments``
text decoded (text that is not a JSON object is kept as ``invalid_arguments``). An
assistant's calls are sent back as ``tool_calls`` and each result as a ``role: "tool"``
message with its ``tool_call_id``. A 400 about ``tools`` or ``tool_choice`` is not adapted
to: a server without tool calling cannot serve such a request.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

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

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_HOST = "api.openai.com"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

# Reasoning models reject temperature/top_p: o1, o3, o4-mini, gpt-5 (not the gpt-5 chat models).
_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o\d+|gpt-5)(?:[.-]|$)", re.IGNORECASE)
_SAMPLING = ("temperature", "top_p")
_TOKEN_FIELDS = {"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}
_UNSUPPORTED_WORDING = (
    "unsupported parameter",
    "unsupported value",
    "not supported",
    "does not support",
    "unrecognized request argument",
    "unknown parameter",
    "extra inputs are not permitted",
    "extra_forbidden",
)
_N_REFUSAL = re.compile(
    r"\bn\b\s*(?:must|should|has to|is|>|<|=)|['\"`]n['\"`]|completion choice|multiple (?:choices|completions)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"""['"`]([A-Za-z_][\w.]*)['"`]""")
_NOT_ADJUSTABLE = ("model", "messages", "tools", "tool_choice")  # never dropped to please a server


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING.match(model)) and "-chat" not in model.lower()


def encode_message(message: Message) -> dict[str, Any]:
    """One message of ``messages``: an assistant's calls as ``tool_calls`` (arguments as JSON
    text, or as the model wrote them when they were invalid), a tool's result as a ``tool``
    message with its ``tool_call_id``."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.invalid_arguments if call.invalid_arguments is not None
                        else json.dumps(call.arguments),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def encode_tools(request: ChatRequest) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` of a request that offers tools (nothing otherwise)."""
    if not request.tools:
        return {}
    fields: dict[str, Any] = {"tools": [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.parameters}}
        for t in request.tools
    ]}
    choice = request.tool_choice
    if choice in ("none", "required"):
        fields["tool_choice"] = choice
    elif choice != "auto":
        fields["tool_choice"] = {"type": "function", "function": {"name": choice}}
    return fields


def decode_tool_calls(message: dict[str, Any], choice: int) -> list[ToolCall]:
    """The function calls of a reply's ``message`` (other kinds of call are not ours); a call
    without an id (some compatible servers) gets ``call_<choice>_<k>``."""
    calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
    found = []
    for k, call in enumerate(c for c in calls if isinstance(c, dict) and c.get("type", "function") == "function"):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{choice}_{k}"
        found.append(ToolCall.from_text(call_id, str(function.get("name") or ""), function.get("arguments")))
    return found


@dataclass
class OpenAIOptions:
    """Recipe keys of ``[llm] backend = "openai"``."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    # None: OPENAI_API_KEY for api.openai.com, no key anywhere else.
    api_key_env: str | None = field(default=None, metadata={"env": True})
    temperature: float | None = None
    top_p: float | None = None
    max_completion_tokens: int | None = None
    n_mode: str = field(default="auto", metadata={"choices": ["auto", "native", "concurrent"]})
    reasoning: str = field(default="auto", metadata={"choices": ["auto", "on", "off"]})
    reasoning_effort: str | None = field(
        default=None, metadata={"choices": ["minimal", "low", "medium", "high"]}
    )
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


class OpenAIBackend(LLMBackendBase):
    """``LLMBackend`` for ``POST {base_url}/chat/completions``."""

    tool_calling = True

    def __init__(
        self,
        options: OpenAIOptions,
        *,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
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
            self._headers["Authorization"] = f"Bearer {key}"
        official = same_host(self.base_url, DEFAULT_HOST)
        self.price = price_for(
            PROVIDER, options.model, options.price_per_mtok_input, options.price_per_mtok_output,
            use_table=official,
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
        self.reasoning = options.reasoning == "on" or (
            options.reasoning == "auto" and is_reasoning_model(options.model)
        )
        self._lock = threading.Lock()
        self._dropped: set[str] = set()
        self._renamed: dict[str, str] = {}
        self._fan_out = SampleFanOut(
            PROVIDER, options.n_mode, self.base_url, "n", options.max_concurrency
        )

    # -- LLMBackend --------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"provider": PROVIDER, "base_url": self.base_url, "model": self.options.model}

    def complete(self, request: ChatRequest) -> ChatResponse:
        started = time.monotonic()
        batches = self._fan_out.collect(
            request.n,
            lambda k, first: self._send(self._payload(request, k, first)),
            lambda batch: len(batch.texts),
        )
        return self._merge(batches, request.n, time.monotonic() - started)

    def close(self) -> None:
        self.client.close()

    # -- internals ---------------------------------------------------------

    def _payload(self, request: ChatRequest, n: int, sample_index: int) -> dict[str, Any]:
        opts = self.options
        body: dict[str, Any] = {
            "model": opts.model,
            "messages": [encode_message(m) for m in request.messages],
            **encode_tools(request),
        }
        if n != 1:
            body["n"] = n
        if not self.reasoning:
            for name, value in (
                ("temperature", request.temperature if request.temperature is not None else opts.temperature),
                ("top_p", request.top_p if request.top_p is not None else opts.top_p),
            ):
                if value is not None:
                    body[name] = value
        limit = request.max_tokens if request.max_tokens is not None else opts.max_completion_tokens
        if limit is not None:
            official = same_host(self.base_url, DEFAULT_HOST)
            body["max_completion_tokens" if official or self.reasoning else "max_tokens"] = limit
        if request.seed is not None:  # the agent's, from [run] seed
            # Separate requests for the samples of one call must not repeat each other.
            body["seed"] = request.seed + sample_index
        if opts.reasoning_effort and self.reasoning:
            body["reasoning_effort"] = opts.reasoning_effort
        with self._lock:
            for old, new in self._renamed.items():
                if old in body:
                    body[new] = body.pop(old)
            for name in self._dropped:
                body.pop(name, None)
        return body

    def _unsupported_param(self, error: HTTPFatalError, body: dict[str, Any]) -> str | None:
        """The request field a 400 complains about, if it complains about one we sent."""
        if error.status != 400:
            return None
        detail = error.detail
        text = detail.message.lower()
        if "n" in body and (detail.param == "n" or _N_REFUSAL.search(detail.message)):
            return "n"
        adjustable = [k for k in body if k not in _NOT_ADJUSTABLE]
        if detail.param in adjustable and (
            detail.code in ("unsupported_parameter", "unsupported_value")
            or any(w in text for w in _UNSUPPORTED_WORDING)
        ):
            return detail.param
        if not any(w in text for w in _UNSUPPORTED_WORDING):
            return None
        for name in _QUOTED.findall(detail.message):
            if name.rsplit(".", 1)[-1] in adjustable:
                return name.rsplit(".", 1)[-1]
        for name in adjustable:  # unquoted mention, e.g. "n is not supported"
            if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", detail.message):
                return name
        return None

    def _send(self, body: dict[str, Any]) -> SampleBatch:
        adjusted: set[str] = set()
        while True:
            try:
                reply = self.client.post_json(self.url, body, self._headers)
                return self._parse(reply.data)
            except HTTPFatalError as error:
                param = self._unsupported_param(error, body)
                if param is None or param in adjusted:
                    raise
                adjusted.add(param)
                if param == "n":
                    raise SamplesRefused(error.detail.message) from error
                with self._lock:
                    if param in _TOKEN_FIELDS:
                        self._renamed[param] = _TOKEN_FIELDS[param]
                        body[_TOKEN_FIELDS[param]] = body.pop(param)
                        action = f"sending {_TOKEN_FIELDS[param]!r} instead"
                    else:
                        self._dropped.add(param)
                        body.pop(param)
                        action = "leaving it out from now on"
                log.warning("%s: %s rejects parameter %r for model %s; %s",
                            PROVIDER, self.base_url, param, self.options.model, action)

    def _parse(self, data: Any) -> SampleBatch:
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            shown = str(data)[:200]
            raise FatalLLMError(
                f"{PROVIDER}: reply from {self.url} has no 'choices' list (is base_url an "
                f"OpenAI-compatible API?): {shown}",
                provider=PROVIDER,
            )
        choices = sorted(
            (c for c in data["choices"] if isinstance(c, dict)),
            key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0,
        )
        texts, reasons, calls = [], [], []
        for index, choice in enumerate(choices):
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            calls.append(decode_tool_calls(message, index))
            content = message.get("content", choice.get("text"))  # "text": completions-style proxies
            if isinstance(content, list):  # content parts
                content = "".join(
                    p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
            if not isinstance(content, str):
                content = ""
            texts.append(content)
            reasons.append(str(choice.get("finish_reason") or ""))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return SampleBatch(
            texts=texts,
            finish_reasons=reasons,
            usage=Usage(token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))),
            model=str(data.get("model") or self.options.model),
            raw=data,
            tool_calls=calls,
        )

    def _merge(self, batches: list[SampleBatch], n: int, latency: float) -> ChatResponse:
        response = merge_samples(batches, n, latency, self.options.model, self.price)
        if len(response.texts) < n:
            raise FatalLLMError(
                f"{PROVIDER}: {self.url} returned {len(response.texts)} of {n} completions "
                "(a reply without choices)",
                provider=PROVIDER,
            )
        return response


def build(options: OpenAIOptions) -> OpenAIBackend:
    if options is None:
        raise InputError("openai backend needs options ([llm] model = ...)")
    return OpenAIBackend(options)
