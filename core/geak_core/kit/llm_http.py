"""HTTP plumbing shared by LLM backends: timeouts, retries, error classification, keys, cost.

Every HTTP backend (the bundled OpenAI and Gemini ones, and third-party ones)
needs the same resilience: connect/read timeouts, retries with exponential
backoff and full jitter on transient failures, honouring the server's own
retry hints, refusing to retry what cannot succeed, a concurrency limit, and
error messages that say who failed and why without ever showing the key.
``JsonHttpClient`` is that in one place.

Classification (``classify_http_error``):

* retried: 408, 409, 429 (rate limits), every 5xx, connection failures,
  timeouts, 2xx bodies that are not JSON;
* fatal (``FatalLLMError``): 401/403 (bad key or no access), 429 that says the
  quota or billing is exhausted, 400 (invalid request), 404 (unknown model or
  wrong URL) and every other 4xx, redirects.

Waits between attempts: the server's hint when it gives one (``retry-after-ms``,
``Retry-After`` in seconds or as an HTTP date, Gemini's
``google.rpc.RetryInfo.retryDelay``), otherwise ``uniform(0, min(max_delay,
base * 2**attempt))`` ("full jitter").
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from geak_core.api.errors import InputError
from geak_core.api.llm import (
    ChatResponse,
    FatalLLMError,
    LLMError,
    RetryableLLMError,
    ToolCall,
    Usage,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 409, 429})
_LOOPBACK = ("all://127.0.0.1", "all://localhost", "all://[::1]")
_MESSAGE_LIMIT = 500


# ---------------------------------------------------------------------------
# Errors that carry what the server said
# ---------------------------------------------------------------------------


@dataclass
class ServerMessage:
    """The useful parts of an error body, whatever the provider's shape."""

    message: str = ""
    code: str = ""  # OpenAI "code" ("insufficient_quota") or Google "status" ("RESOURCE_EXHAUSTED")
    type: str = ""  # OpenAI "type" ("invalid_request_error")
    param: str | None = None  # OpenAI "param": the offending request field
    details: list[dict[str, Any]] = field(default_factory=list)  # Google error details
    raw: str = ""


class HTTPFatalError(FatalLLMError):
    """A fatal HTTP failure; ``detail`` is the server's parsed error body."""

    def __init__(
        self, message: str, *, status: int | None, provider: str, detail: ServerMessage | None = None
    ):
        super().__init__(message, status=status, provider=provider)
        self.detail = detail or ServerMessage()


class HTTPRetryableError(RetryableLLMError):
    """A transient HTTP failure; ``detail`` is the server's parsed error body."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None,
        provider: str,
        retry_after_s: float | None = None,
        detail: ServerMessage | None = None,
    ):
        super().__init__(message, status=status, provider=provider, retry_after_s=retry_after_s)
        self.detail = detail or ServerMessage()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def parse_error_body(body: str) -> ServerMessage:
    """Read OpenAI-, Google-, vLLM- and Ollama-style error bodies (or plain text)."""
    info = ServerMessage(raw=body)
    try:
        data = json.loads(body)
    except ValueError:
        info.message = " ".join(body.split())
        return info
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # some Google front ends wrap the error in a list
    if not isinstance(data, dict):
        info.message = " ".join(body.split())
        return info
    error = data.get("error", data)
    if isinstance(error, str):  # Ollama, llama.cpp: {"error": "..."}
        info.message = error
        return info
    if not isinstance(error, dict):
        info.message = " ".join(body.split())
        return info
    info.message = _text(error.get("message") or error.get("detail") or error.get("msg"))
    code = error.get("code")
    status = error.get("status")
    info.code = _text(status if isinstance(status, str) else code if isinstance(code, str) else "")
    info.type = _text(error.get("type"))
    param = error.get("param")
    info.param = param if isinstance(param, str) and param else None
    details = error.get("details")
    if isinstance(details, list):
        info.details = [d for d in details if isinstance(d, dict)]
    if not info.message:
        info.message = " ".join(body.split())
    return info


# ---------------------------------------------------------------------------
# Retry hints
# ---------------------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_TRY_AGAIN = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def parse_retry_after(
    headers: Mapping[str, str],
    detail: ServerMessage | None = None,
    now: Callable[[], float] = time.time,
) -> float | None:
    """Seconds the server asks us to wait, or None when it gives no hint.

    Order: ``retry-after-ms`` (OpenAI), ``Retry-After`` (seconds or HTTP date),
    a ``google.rpc.RetryInfo`` detail's ``retryDelay`` ("12s", "1.5s"), then
    "try again in 2s" in the message.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    after = lowered.get("retry-after")
    if after is not None:
        after = after.strip()
        try:
            return max(0.0, float(after))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(after)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                return max(0.0, when.timestamp() - now())
    for item in (detail.details if detail else []):
        if str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(_text(item.get("retryDelay")))
            if match:
                return float(match.group(1))
    if detail is not None:  # "Please try again in 2.5s" / "in 350ms" (OpenAI rate-limit wording)
        match = _TRY_AGAIN.search(detail.message)
        if match:
            value = float(match.group(1))
            return value / 1000.0 if match.group(2) == "ms" else value
    return None


# ---------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------

_BILLING = ("check your plan and billing", "billing details", "billing hard limit")


def _quota_exhausted(detail: ServerMessage, has_hint: bool) -> bool:
    """A 429 that waiting a little will not fix."""
    if "insufficient_quota" in (detail.code, detail.type):
        return True
    texts = [detail.message.lower()]
    for item in detail.details:
        for violation in item.get("violations", []) or []:
            if isinstance(violation, dict):
                texts.append(json.dumps(violation).lower())
    blob = " ".join(texts)
    if "perday" in blob or "per day" in blob or "limit: 0," in blob or blob.endswith("limit: 0"):
        return True
    return not has_hint and any(phrase in blob for phrase in _BILLING)


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def classify_http_error(
    provider: str,
    status: int,
    url: str,
    body: str,
    headers: Mapping[str, str],
    *,
    now: Callable[[], float] = time.time,
    secrets: Sequence[str] = (),
    auth_hint: str = "",
) -> LLMError:
    """Turn a non-2xx reply into a retryable or fatal error with a readable message."""
    detail = parse_error_body(body)
    said = detail.message[:_MESSAGE_LIMIT] or "(empty body)"
    if detail.code and detail.code not in said:
        said = f"{detail.code}: {said}"
    hint = parse_retry_after(headers, detail, now)
    base = f"{provider}: HTTP {status} from {_where(url)}: {said}"
    base = redact(base, secrets)
    if status in RETRYABLE_STATUSES or status >= 500:
        if status == 429 and _quota_exhausted(detail, hint is not None):
            return HTTPFatalError(
                base + " (quota or billing exhausted; retrying cannot help)",
                status=status, provider=provider, detail=detail,
            )
        return HTTPRetryableError(
            base, status=status, provider=provider, retry_after_s=hint, detail=detail
        )
    if status in (401, 403):
        extra = f" (the key is rejected or lacks access; {auth_hint})" if auth_hint else ""
        return HTTPFatalError(base + extra, status=status, provider=provider, detail=detail)
    if status == 404:
        return HTTPFatalError(
            base + " (unknown model, or base_url does not point at the API)",
            status=status, provider=provider, detail=detail,
        )
    if 300 <= status < 400:
        target = headers.get("location") or headers.get("Location") or "?"
        return HTTPFatalError(
            f"{provider}: HTTP {status} redirect from {_where(url)} to {redact(target, secrets)} "
            "(redirects are not followed; set base_url to the final address)",
            status=status, provider=provider, detail=detail,
        )
    return HTTPFatalError(base, status=status, provider=provider, detail=detail)


# ---------------------------------------------------------------------------
# Retry policy and the client
# ---------------------------------------------------------------------------


@dataclass
class RetryPolicy:
    """How often and how long to wait; ``sleep``/``now``/``random`` are injectable for tests."""

    max_retries: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 300.0  # a server asking for a longer wait ends the call
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], float] = time.time
    random: Callable[[], float] = random.random

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max_delay, base * 2**attempt)]."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** min(attempt, 30)))
        return ceiling * self.random()

    def delay_for(self, error: RetryableLLMError, attempt: int) -> float:
        if error.retry_after_s is not None:
            return error.retry_after_s
        return self.backoff(attempt)


@dataclass
class JsonReply:
    data: Any
    status: int
    headers: dict[str, str]
    attempts: int
    latency_s: float


class JsonHttpClient:
    """POSTs JSON with timeouts, retries and a concurrency limit; raises ``LLMError``s.

    ``secrets`` are removed from every message; ``auth_hint`` tells the user
    where the key came from when the server rejects it.
    """

    def __init__(
        self,
        provider: str,
        *,
        timeout_connect_s: float = 10.0,
        timeout_read_s: float = 600.0,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        secrets: Sequence[str] = (),
        auth_hint: str = "",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.provider = provider
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.limit = threading.BoundedSemaphore(max_concurrency)
        self.timeout_read_s = timeout_read_s
        self.timeout_connect_s = timeout_connect_s
        self._secrets = tuple(s for s in secrets if s)
        self._auth_hint = auth_hint
        self._client = httpx.Client(
            timeout=httpx.Timeout(
                connect=timeout_connect_s, read=timeout_read_s, write=timeout_read_s, pool=None
            ),
            limits=httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency),
            follow_redirects=False,
            transport=transport,
            trust_env=True,  # proxies from the environment, except for servers on this machine:
            mounts=None if transport is not None else {pattern: None for pattern in _LOOPBACK},
        )

    def close(self) -> None:
        self._client.close()

    def _attempt(self, url: str, payload: Any, headers: Mapping[str, str]) -> JsonReply:
        started = time.monotonic()
        try:
            with self.limit:
                response = self._client.post(url, json=payload, headers=dict(headers))
        except httpx.TimeoutException as exc:
            phase = "connecting" if isinstance(exc, httpx.ConnectTimeout) else "waiting for the reply"
            limit = self.timeout_connect_s if isinstance(exc, httpx.ConnectTimeout) else self.timeout_read_s
            raise HTTPRetryableError(
                f"{self.provider}: timed out {phase} from {_where(url)} (limit {limit:g} s)",
                status=None, provider=self.provider,
            ) from exc
        except httpx.TransportError as exc:
            raise HTTPRetryableError(
                f"{self.provider}: connection to {_where(url)} failed: "
                f"{redact(str(exc) or type(exc).__name__, self._secrets)}",
                status=None, provider=self.provider,
            ) from exc
        latency = time.monotonic() - started
        resp_headers = dict(response.headers)
        if not 200 <= response.status_code < 300:
            raise classify_http_error(
                self.provider, response.status_code, url, response.text, response.headers,
                now=self.retry.now, secrets=self._secrets, auth_hint=self._auth_hint,
            )
        try:
            data = response.json()
        except ValueError as exc:
            snippet = " ".join(response.text[:200].split()) or "(empty body)"
            raise HTTPRetryableError(
                f"{self.provider}: HTTP {response.status_code} from {_where(url)} is not valid JSON: "
                f"{redact(snippet, self._secrets)}",
                status=response.status_code, provider=self.provider,
            ) from exc
        return JsonReply(data, response.status_code, resp_headers, 1, latency)

    def post_json(self, url: str, payload: Any, headers: Mapping[str, str] | None = None) -> JsonReply:
        """POST ``payload``; retry transient failures; raise ``FatalLLMError`` or, when
        retries run out, the last ``RetryableLLMError``."""
        headers = headers or {}
        policy = self.retry
        attempt = 0
        while True:
            try:
                reply = self._attempt(url, payload, headers)
                reply.attempts = attempt + 1
                return reply
            except RetryableLLMError as error:
                if attempt >= policy.max_retries:
                    error.args = (f"{error} (gave up after {attempt + 1} attempts)",)
                    raise
                delay = policy.delay_for(error, attempt)
                if delay > policy.max_retry_after_s:
                    error.args = (
                        f"{error} (the server asks to wait {delay:g} s, more than the "
                        f"{policy.max_retry_after_s:g} s allowed)",
                    )
                    raise
                log.warning("%s; retrying in %.2f s (attempt %d of %d)",
                            error, delay, attempt + 2, policy.max_retries + 1)
                policy.sleep(delay)
                attempt += 1


def keyed_client(
    provider: str,
    key: str | None,
    key_env: str | None,
    *,
    max_retries: int,
    retry: RetryPolicy | None = None,
    timeout_connect_s: float = 10.0,
    timeout_read_s: float = 600.0,
    max_concurrency: int = 8,
    transport: httpx.BaseTransport | None = None,
) -> JsonHttpClient:
    """The ``JsonHttpClient`` of a backend that sends ``key`` (or none), as
    ``resolve_api_key`` returned it with the variable ``key_env`` it came from.

    The key never shows in a message; a rejected key's message names its variable, or
    says that none is sent to this server. ``max_retries`` is set on ``retry`` (a
    default policy when None).
    """
    policy = retry or RetryPolicy()
    policy.max_retries = max_retries
    return JsonHttpClient(
        provider,
        timeout_connect_s=timeout_connect_s,
        timeout_read_s=timeout_read_s,
        retry=policy,
        max_concurrency=max_concurrency,
        secrets=[key] if key else [],
        auth_hint=f"it comes from ${key_env}" if key_env else "no key is sent to this base_url; "
        "name the variable holding one with api_key_env",
        transport=transport,
    )


# ---------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------


def same_host(url: str, host: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and (parts.hostname or "").lower() == host.lower()


def check_http_options(options: Any) -> None:
    """Validation shared by HTTP backends' options (model, base_url, limits, prices)."""
    if not options.model:
        raise ValueError("model must not be empty")
    if not options.base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {options.base_url!r}")
    if options.max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    if options.max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if options.timeout_connect_s <= 0 or options.timeout_read_s <= 0:
        raise ValueError("timeouts must be positive")
    if (options.price_per_mtok_input is None) != (options.price_per_mtok_output is None):
        raise ValueError("set both price_per_mtok_input and price_per_mtok_output, or neither")


def default_key_requirement(
    base_url: str, api_key_env: str | None, default_host: str, default_env: str
) -> list[tuple[str, str]]:
    """For ``required_env()``: the default key variable, needed only on the provider's host."""
    if api_key_env is None and same_host(base_url, default_host):
        return [("api_key_env", default_env)]
    return []


def token_count(value: Any) -> int:
    """A token count from a server that may send null, a float or a string."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def resolve_api_key(
    provider: str,
    *,
    base_url: str,
    api_key_env: str | None,
    default_env: str,
    default_host: str,
    environ: Mapping[str, str] | None = None,
) -> tuple[str | None, str | None]:
    """(key, variable it came from), or (None, None) when no key may be sent.

    The default variable applies only to the provider's own host, so pointing a
    backend at another server never leaks the provider's key; a variable named
    explicitly in the recipe is sent wherever ``base_url`` points.
    """
    env = os.environ if environ is None else environ
    name = api_key_env
    if name is None:
        if not same_host(base_url, default_host):
            return None, None
        name = default_env
    value = env.get(name, "")
    if not value:
        raise InputError(
            f"{provider}: environment variable {name} is not set; it holds the API key for "
            f"{base_url} (export {name}=... or name another variable with api_key_env)"
        )
    return value.strip(), name


# ---------------------------------------------------------------------------
# Cost
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.prompt_tokens * self.input_per_mtok + usage.completion_tokens * self.output_per_mtok
        ) / 1e6


# List prices (USD per million tokens, standard tier, no cached-input discount),
# as published by each provider in 2025. Recipes override them with
# price_per_mtok_input/output; models not listed have no cost unless priced.
KNOWN_PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-5": Price(1.25, 10.0),
        "gpt-5-mini": Price(0.25, 2.0),
        "gpt-5-nano": Price(0.05, 0.40),
        "gpt-4.1": Price(2.0, 8.0),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-4o": Price(2.50, 10.0),
        "gpt-4o-mini": Price(0.15, 0.60),
        "o1": Price(15.0, 60.0),
        "o3": Price(2.0, 8.0),
        "o3-mini": Price(1.10, 4.40),
        "o4-mini": Price(1.10, 4.40),
    },
    "gemini": {
        "gemini-2.5-pro": Price(1.25, 10.0),  # prompts up to 200k tokens
        "gemini-2.5-flash": Price(0.30, 2.50),
        "gemini-2.5-flash-lite": Price(0.10, 0.40),
        "gemini-2.0-flash": Price(0.10, 0.40),
    },
}


def price_for(
    provider: str,
    model: str,
    input_per_mtok: float | None = None,
    output_per_mtok: float | None = None,
    *,
    use_table: bool = True,
) -> Price | None:
    """The recipe's price when given, else the longest listed model prefix (when allowed)."""
    if input_per_mtok is not None or output_per_mtok is not None:
        return Price(input_per_mtok or 0.0, output_per_mtok or 0.0)
    if not use_table:
        return None
    table = KNOWN_PRICES.get(provider, {})
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in table:
        if (name == prefix or name.startswith(prefix + "-")) and len(prefix) > len(best):
            best = prefix
    return table[best] if best else None


# ---------------------------------------------------------------------------
# Concurrency helper
# ---------------------------------------------------------------------------


def run_concurrently(fn: Callable[[int], T], count: int, max_workers: int) -> list[T]:
    """``[fn(0), ..., fn(count-1)]`` run in threads; the first failure (by index) is raised
    after every call has finished."""
    if count <= 0:
        return []
    if count == 1 or max_workers <= 1:
        return [fn(i) for i in range(count)]
    with ThreadPoolExecutor(max_workers=min(count, max_workers)) as pool:
        futures = [pool.submit(fn, i) for i in range(count)]
        outcomes: list[T] = []
        first_error: BaseException | None = None
        for future in futures:
            try:
                outcomes.append(future.result())
            except BaseException as exc:  # noqa: B036 - re-raised below
                if first_error is None:
                    first_error = exc
    if first_error is not None:
        raise first_error
    return outcomes


class SamplesRefused(Exception):
    """Raised by a backend's send function when the server rejects more than one sample in
    one request (``n`` for OpenAI, ``candidateCount`` for Gemini)."""


class SampleFanOut:
    """Gets ``n`` samples from a server that may or may not return ``n`` in one request.

    ``n_mode`` is the backends' option: ``"native"`` asks once for all ``n`` (a refusal or
    a short answer is a :class:`FatalLLMError`); ``"concurrent"`` sends ``n`` requests of one
    sample, at most ``max_concurrency`` at a time; ``"auto"`` asks once and learns from the
    answer: after a refusal or a short answer, this backend sends one request per sample for
    good (logged once), after a full answer it keeps asking natively.

    ``who`` names the server or model in messages, ``param`` the request field that carries
    the count. Thread-safe: one instance serves a backend's concurrent calls.
    """

    def __init__(self, provider: str, n_mode: str, who: str, param: str, max_concurrency: int):
        self.provider, self.n_mode, self.who, self.param = provider, n_mode, who, param
        self.max_concurrency = max_concurrency
        self._native: bool | None = {"native": True, "concurrent": False}.get(n_mode)
        self._lock = threading.Lock()

    def collect(self, n: int, send: Callable[[int, int], T], count: Callable[[T], int]) -> list[T]:
        """Batches answering ``n`` samples in all. ``send(k, first)`` asks for ``k`` samples
        (numbered from ``first``, for per-sample seeds) and may raise :class:`SamplesRefused`;
        ``count(batch)`` is how many samples a batch holds."""
        if n < 1:
            raise FatalLLMError(f"{self.provider}: n must be at least 1, got {n}", provider=self.provider)
        batches: list[T] = []
        have = 0
        hint = 'use n_mode = "auto" or "concurrent"'
        if n == 1 or self._native is not False:
            try:
                first = send(n, 0)
                batches.append(first)
                have = count(first)
            except SamplesRefused as exc:
                if self.n_mode == "native":
                    raise FatalLLMError(
                        f"{self.provider}: {self.who} refuses {self.param}={n} ({exc}); {hint}",
                        status=400, provider=self.provider,
                    ) from exc
                self._learn(False, f"refuses {self.param}={n}")
        if have < n:
            if have and self.n_mode == "native":
                raise FatalLLMError(
                    f"{self.provider}: asked {self.who} for {self.param}={n}, got {have} samples; {hint}",
                    provider=self.provider,
                )
            if have and n > 1:
                self._learn(False, f"returned {have} of {self.param}={n} samples")
            start = have
            batches += run_concurrently(lambda i: send(1, start + i), n - have, self.max_concurrency)
        elif n > 1 and self._native is None:
            self._learn(True, "")
        return batches

    def _learn(self, works: bool, why: str) -> None:
        with self._lock:
            if self._native is None and not works:
                log.warning("%s: %s %s; further samples are separate requests",
                            self.provider, self.who, why)
            if self.n_mode == "auto":
                self._native = works


@dataclass
class SampleBatch:
    """The samples one request returned, as a backend parsed them from the reply;
    ``tool_calls`` and ``native`` as in ``ChatResponse`` (empty: no sample called a tool)."""

    texts: list[str]
    finish_reasons: list[str]
    usage: Usage
    model: str
    raw: Any
    tool_calls: list[list[ToolCall]] = field(default_factory=list)
    native: list[dict[str, Any] | None] = field(default_factory=list)


def merge_samples(
    batches: Sequence[SampleBatch], n: int, latency_s: float, model: str, price: Price | None
) -> ChatResponse:
    """One ``ChatResponse`` of the first ``n`` samples of ``batches`` (what
    ``SampleFanOut.collect`` gathered), with the usage of every request and its cost at
    ``price``; ``model`` names the model when there is no batch."""
    texts: list[str] = []
    reasons: list[str] = []
    calls: list[list[ToolCall]] = []
    native: list[dict[str, Any] | None] = []
    usage = Usage()
    for batch in batches:
        texts += batch.texts
        reasons += batch.finish_reasons
        calls += batch.tool_calls or [[] for _ in batch.texts]
        native += batch.native or [None] * len(batch.texts)
        usage.prompt_tokens += batch.usage.prompt_tokens
        usage.completion_tokens += batch.usage.completion_tokens
    return ChatResponse(
        texts=texts[:n],
        usage=usage,
        model=batches[0].model if batches else model,
        latency_s=latency_s,
        cost_usd=price.cost(usage) if price else None,
        raw=[b.raw for b in batches],
        finish_reasons=reasons[:n],
        tool_calls=calls[:n],
        native=native[:n],
    )
