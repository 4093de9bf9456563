"""Anthropic Messages API over plain HTTP (``POST {base_url}/v1/messages``), for Claude models.

System messages become the top-level ``system``; user and assistant turns are sent as they
are. The API returns one sample per request, so ``n`` samples are ``n`` concurrent requests.
A reply's content is a list of blocks: the text blocks are the answer; ``thinking`` and
``redacted_thinking`` blocks (extended thinking) stay out of it and are kept, with the whole
reply, in ``ChatResponse.raw``, which the run store records.

Usage: Anthropic counts prompt tokens read from or written to the prompt cache apart from
``input_tokens``. The prompt tokens of a response are all three; its cost prices each at its
own rate (cache writes 1.25x the input price, 2x for one-hour writes; cache reads 0.1x).
A reply stopped with ``stop_reason`` ``refusal`` is a ``FatalLLMError``, as is a request the
server refuses for want of credit or over a usage limit.

Tools: a request's ``tools`` go out as ``tools`` of ``{name, description, input_schema}``
(with ``tool_choice`` ``none``, ``any`` for ``"required"`` or ``tool`` for a name; nothing for
``"auto"``, the API's default); a reply's ``tool_use`` blocks come back as ``ToolCall``s, and
its whole content as the turn's ``native``, which goes back unchanged in the assistant
message (with thinking on, the thinking blocks before a ``tool_use`` must return with it).
The results of one turn's calls go in one user message, as ``tool_result`` blocks ahead of
any text. With thinking on the API takes only ``auto`` and ``none``: forcing a tool is a
``FatalLLMError``.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from geak_core.api.components import LLMBackendBase
from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, Message, ToolCall, Usage
from geak_core.kit.llm_http import (
    HTTPFatalError,
    Price,
    RetryPolicy,
    SampleBatch,
    SampleFanOut,
    check_http_options,
    default_key_requirement,
    keyed_client,
    merge_samples,
    resolve_api_key,
    same_host,
    token_count,
)

log = logging.getLogger(__name__)

PROVIDER = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_HOST = "api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"

EPHEMERAL = {"type": "ephemeral"}
CACHE_WRITE_FACTOR = 1.25  # five-minute cache writes, times the input price
CACHE_WRITE_1H_FACTOR = 2.0  # one-hour cache writes
CACHE_READ_FACTOR = 0.1
MIN_THINKING_BUDGET = 1024  # the API's smallest budget_tokens
DEFAULT_ANSWER_TOKENS = 16384  # room for the answer when max_tokens is not set
UNLISTED_ANSWER_TOKENS = 8192  # the same, for a model not in CLAUDE_MODELS
THINKING_TOP_P = (0.95, 1.0)  # the only top_p the API takes while thinking is on

_BILLING = re.compile(
    r"credit balance|billing|purchase credits|usage limits?|spend(?:ing)? limit", re.IGNORECASE
)


def encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """``messages`` of the request (system messages aside, they go to ``system``): plain turns
    as they are; an assistant's calls as its ``native`` content, or as text and ``tool_use``
    blocks; the results that follow as ``tool_result`` blocks of one user message, with the
    text of a user turn right after them joined to it."""
    encoded: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the blocks of the open message of results
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id,
                                     "content": message.content}
            if message.is_error:
                block["is_error"] = True
            if results is None:
                results = []
                encoded.append({"role": "user", "content": results})
            results.append(block)
            continue
        if message.role == "user" and results is not None:
            results.append({"type": "text", "text": message.content})
        elif message.role == "assistant" and message.tool_calls:
            encoded.append({"role": "assistant", "content": _assistant_blocks(message)})
        else:
            encoded.append({"role": message.role, "content": message.content})
        results = None
    return encoded


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    native = message.native or {}
    if native.get("provider") == PROVIDER and isinstance(native.get("content"), list):
        return list(native["content"])
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    return blocks + [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                     for c in message.tool_calls]


def encode_tools(request: ChatRequest, thinking: bool) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` of a request that offers tools (nothing otherwise)."""
    if not request.tools:
        return {}
    fields: dict[str, Any] = {"tools": [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
    ]}
    choice = request.tool_choice
    if thinking and choice not in ("auto", "none"):
        raise FatalLLMError(
            f"{PROVIDER}: tool_choice {choice!r} cannot be sent with thinking on (the API takes only "
            "auto and none then); leave thinking_budget_tokens unset or let the model choose",
            provider=PROVIDER,
        )
    if choice == "none":
        fields["tool_choice"] = {"type": "none"}
    elif choice == "required":
        fields["tool_choice"] = {"type": "any"}
    elif choice != "auto":
        fields["tool_choice"] = {"type": "tool", "name": choice}
    return fields


@dataclass(frozen=True)
class ClaudeModel:
    """What the backend knows of a family of Claude models."""

    price: Price  # list price, standard tier, prompts up to 200k tokens
    max_output_tokens: int  # the largest max_tokens the model takes


# Published list prices (USD per million tokens) and output ceilings, matched by the longest
# model-name prefix, as for the other backends' price tables: a newer model of a family is
# priced as the family's entry until it is listed. Recipes override the price with
# price_per_mtok_input/output; the cache rates follow from the input price.
CLAUDE_MODELS: dict[str, ClaudeModel] = {
    "claude-opus-4-6": ClaudeModel(Price(5.0, 25.0), 128000),
    "claude-opus-4-5": ClaudeModel(Price(5.0, 25.0), 64000),
    "claude-opus-4-1": ClaudeModel(Price(15.0, 75.0), 32000),
    "claude-opus-4": ClaudeModel(Price(15.0, 75.0), 32000),
    "claude-sonnet-4": ClaudeModel(Price(3.0, 15.0), 64000),  # and claude-sonnet-4-5, -4-6
    "claude-haiku-4-5": ClaudeModel(Price(1.0, 5.0), 64000),
    "claude-3-7-sonnet": ClaudeModel(Price(3.0, 15.0), 64000),
    "claude-3-5-sonnet": ClaudeModel(Price(3.0, 15.0), 8192),
    "claude-3-5-haiku": ClaudeModel(Price(0.80, 4.0), 8192),
    "claude-3-opus": ClaudeModel(Price(15.0, 75.0), 4096),
    "claude-3-haiku": ClaudeModel(Price(0.25, 1.25), 4096),
}


def claude_model(model: str) -> ClaudeModel | None:
    """The listed family of ``model`` (the longest matching prefix), or None."""
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in CLAUDE_MODELS:
        if (name == prefix or name.startswith(prefix + "-")) and len(prefix) > len(best):
            best = prefix
    return CLAUDE_MODELS[best] if best else None


def default_max_tokens(model: str, thinking_budget_tokens: int | None = None) -> int:
    """``max_tokens`` when neither recipe nor request sets it: room for a 16k-token answer
    (8k for an unlisted model) besides any thinking budget, within the model's ceiling."""
    family = claude_model(model)
    answer = DEFAULT_ANSWER_TOKENS if family else UNLISTED_ANSWER_TOKENS
    if family:
        answer = min(answer, family.max_output_tokens)
    wanted = answer + (thinking_budget_tokens or 0)
    return min(wanted, family.max_output_tokens) if family else wanted


@dataclass(frozen=True)
class ClaudeTokens:
    """A reply's ``usage``: prompt tokens read from or written to the cache are counted
    apart from ``input_tokens`` and priced at their own rates."""

    input: int = 0
    output: int = 0  # thinking included
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0

    @classmethod
    def from_usage(cls, usage: Any) -> ClaudeTokens:
        usage = usage if isinstance(usage, Mapping) else {}
        written = token_count(usage.get("cache_creation_input_tokens"))
        split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), Mapping) else {}
        hour = min(written, token_count(split.get("ephemeral_1h_input_tokens")))
        return cls(
            input=token_count(usage.get("input_tokens")),
            output=token_count(usage.get("output_tokens")),
            cache_write_5m=written - hour,
            cache_write_1h=hour,
            cache_read=token_count(usage.get("cache_read_input_tokens")),
        )

    @property
    def prompt(self) -> int:
        return self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read

    def usage(self) -> Usage:
        return Usage(self.prompt, self.output)

    def cost(self, price: Price) -> float:
        prompt = (
            self.input
            + self.cache_write_5m * CACHE_WRITE_FACTOR
            + self.cache_write_1h * CACHE_WRITE_1H_FACTOR
            + self.cache_read * CACHE_READ_FACTOR
        )
        return (prompt * price.input_per_mtok + self.output * price.output_per_mtok) / 1e6


@dataclass
class ClaudeBatch(SampleBatch):
    """The one sample of one reply, with its token counts by kind."""

    tokens: ClaudeTokens = field(default_factory=ClaudeTokens)


@dataclass
class AnthropicOptions:
    """Recipe keys of ``[llm] backend = "anthropic"``."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    # None: ANTHROPIC_API_KEY for api.anthropic.com, no key anywhere else.
    api_key_env: str | None = field(default=None, metadata={"env": True, "default_env": DEFAULT_KEY_ENV})
    temperature: float | None = None  # 0 to 1; with thinking on, 1 or unset
    top_p: float | None = None  # with thinking on, 0.95 to 1 or unset
    max_tokens: int | None = None  # None: default_max_tokens() of the model
    stop_sequences: list[str] = field(default_factory=list)
    thinking_budget_tokens: int | None = None  # extended thinking: at least 1024, below max_tokens
    prompt_cache: bool = False  # cache the system prompt and the first user message
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
        if self.temperature is not None and not 0.0 <= self.temperature <= 1.0:
            raise ValueError(f"temperature must be between 0 and 1, got {self.temperature}")
        if self.top_p is not None and not 0.0 <= self.top_p <= 1.0:
            raise ValueError(f"top_p must be between 0 and 1, got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if any(not s.strip() for s in self.stop_sequences):
            raise ValueError("stop_sequences must not hold empty or whitespace-only strings")
        budget = self.thinking_budget_tokens
        if budget is None:
            return
        if budget < MIN_THINKING_BUDGET:
            raise ValueError(f"thinking_budget_tokens must be at least {MIN_THINKING_BUDGET}, got {budget}")
        if self.max_tokens is not None and self.max_tokens <= budget:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) must exceed thinking_budget_tokens ({budget}): "
                "thinking is part of max_tokens"
            )
        if self.temperature is not None and self.temperature != 1.0:
            raise ValueError(
                f"with thinking_budget_tokens set, temperature must be 1 or unset, got {self.temperature}"
            )
        low, high = THINKING_TOP_P
        if self.top_p is not None and not low <= self.top_p <= high:
            raise ValueError(
                f"with thinking_budget_tokens set, top_p must be between {low} and {high} or unset, "
                f"got {self.top_p}"
            )


class AnthropicBackend(LLMBackendBase):
    """``LLMBackend`` for ``POST {base_url}/v1/messages``."""

    tool_calling = True

    def __init__(
        self,
        options: AnthropicOptions,
        *,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.url = self.base_url + "/v1/messages"
        self.model = options.model
        self.max_concurrency = options.max_concurrency
        self.thinking = options.thinking_budget_tokens
        self.default_max_tokens = default_max_tokens(self.model, self.thinking)
        if self.thinking is not None and options.max_tokens is None and self.default_max_tokens <= self.thinking:
            raise InputError(
                f"{PROVIDER}: thinking_budget_tokens ({self.thinking}) leaves no room for an answer "
                f"within the {self.default_max_tokens} output tokens model {self.model} allows"
            )
        key, env_name = resolve_api_key(
            PROVIDER,
            base_url=self.base_url,
            api_key_env=options.api_key_env,
            default_env=DEFAULT_KEY_ENV,
            default_host=DEFAULT_HOST,
        )
        self._headers = {"content-type": "application/json", "anthropic-version": API_VERSION}
        if key:
            self._headers["x-api-key"] = key
        self.price = self._price(same_host(self.base_url, DEFAULT_HOST))
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
        # The API has no n: every sample is a request of its own.
        self._fan_out = SampleFanOut(PROVIDER, "concurrent", f"model {self.model}", "n", options.max_concurrency)
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    # -- LLMBackend --------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"provider": PROVIDER, "base_url": self.base_url, "model": self.model}

    def complete(self, request: ChatRequest) -> ChatResponse:
        started = time.monotonic()
        payload = self._payload(request)
        batches = self._fan_out.collect(request.n, lambda k, first: self._send(payload), lambda b: 1)
        response = merge_samples(batches, request.n, time.monotonic() - started, self.model, None)
        if self.price is not None:
            response.cost_usd = sum(b.tokens.cost(self.price) for b in batches)
        return response

    def close(self) -> None:
        self.client.close()

    # -- internals ---------------------------------------------------------

    def _price(self, official: bool) -> Price | None:
        """The recipe's price when given, else the listed family's on the official endpoint."""
        opts = self.options
        if opts.price_per_mtok_input is not None and opts.price_per_mtok_output is not None:
            return Price(opts.price_per_mtok_input, opts.price_per_mtok_output)
        family = claude_model(self.model) if official else None
        return family.price if family else None

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        opts = self.options
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        limit = request.max_tokens if request.max_tokens is not None else opts.max_tokens
        limit = limit if limit is not None else self.default_max_tokens
        body: dict[str, Any] = {"model": self.model, "max_tokens": limit,
                                "messages": encode_messages(request.messages),
                                **encode_tools(request, self.thinking is not None)}
        if system:
            body["system"] = system
        if opts.prompt_cache:
            self._mark_cache_prefix(body)
        temperature = request.temperature if request.temperature is not None else opts.temperature
        top_p = request.top_p if request.top_p is not None else opts.top_p
        if self.thinking is not None:
            if limit <= self.thinking:
                raise FatalLLMError(
                    f"{PROVIDER}: max_tokens {limit} of this request does not exceed "
                    f"thinking_budget_tokens {self.thinking} (thinking is part of max_tokens)",
                    provider=PROVIDER,
                )
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking}
            low, high = THINKING_TOP_P
            if temperature is not None and temperature != 1.0:
                self._warn_once("temperature", f"temperature {temperature} is not sent: with "
                                "thinking on the API takes only 1")
                temperature = None
            if top_p is not None and not low <= top_p <= high:
                self._warn_once("top_p", f"top_p {top_p} is not sent: with thinking on the API "
                                f"takes only {low} to {high}")
                top_p = None
        if temperature is not None:
            body["temperature"] = temperature
        if top_p is not None:
            body["top_p"] = top_p
        if opts.stop_sequences:
            body["stop_sequences"] = list(opts.stop_sequences)
        return body

    @staticmethod
    def _mark_cache_prefix(body: dict[str, Any]) -> None:
        """Cache breakpoints after the system prompt and after the first user message: the
        prefix every call of a run shares, and the one repeated samples, lineages and later
        turns of a conversation share."""
        if "system" in body:
            body["system"] = [{"type": "text", "text": body["system"], "cache_control": EPHEMERAL}]
        for message in body["messages"]:
            if message["role"] == "user":
                if isinstance(message["content"], str):
                    message["content"] = [{"type": "text", "text": message["content"], "cache_control": EPHEMERAL}]
                break

    def _warn_once(self, what: str, message: str) -> None:
        with self._lock:
            if what in self._warned:
                return
            self._warned.add(what)
        log.warning("%s: %s", PROVIDER, message)

    def _send(self, body: dict[str, Any]) -> ClaudeBatch:
        try:
            reply = self.client.post_json(self.url, body, self._headers)
        except HTTPFatalError as error:
            detail = error.detail
            if error.status == 402 or detail.type == "billing_error" or (
                error.status in (400, 403) and _BILLING.search(detail.message)
            ):
                raise HTTPFatalError(
                    f"{error} (credit balance or usage limit exhausted; retrying cannot help)",
                    status=error.status, provider=PROVIDER, detail=detail,
                ) from error
            raise
        return self._parse(reply.data)

    def _parse(self, data: Any) -> ClaudeBatch:
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise FatalLLMError(
                f"{PROVIDER}: reply from {self.url} has no 'content' list (is base_url the "
                f"Messages API's root?): {str(data)[:200]}",
                provider=PROVIDER,
            )
        reason = str(data.get("stop_reason") or "")
        if reason == "refusal":
            raise FatalLLMError(
                f"{PROVIDER}: model {self.model} refused to answer (stop_reason refusal); the same "
                "prompt would be refused again",
                provider=PROVIDER,
            )
        blocks = [block for block in data["content"] if isinstance(block, dict)]
        text = "".join(
            block["text"] for block in blocks if block.get("type") == "text" and isinstance(block.get("text"), str)
        )
        calls = [
            ToolCall.from_value(str(block.get("id") or f"toolu_{k}"), str(block.get("name") or ""), block.get("input"))
            for k, block in enumerate(b for b in blocks if b.get("type") == "tool_use")
        ]
        tokens = ClaudeTokens.from_usage(data.get("usage"))
        return ClaudeBatch(
            texts=[text],
            finish_reasons=[reason],
            usage=tokens.usage(),
            model=str(data.get("model") or self.model),
            raw=data,
            tool_calls=[calls],
            native=[{"provider": PROVIDER, "content": data["content"]} if calls else None],
            tokens=tokens,
        )


def build(options: AnthropicOptions) -> AnthropicBackend:
    if options is None:
        raise InputError("anthropic backend needs options ([llm] model = ...)")
    return AnthropicBackend(options)
