"""LLM calls recorded, resumable and budgeted: what makes a run repeatable and bounded.

Every call is stored under its *slot* (task, lineage, iteration, purpose; and a
conversing round's turn). A resumed run asks ``RecordedLLM`` again and gets the
recorded reply without a request; only slots never answered reach the backend,
and only while the ``Budget`` (calls, tokens, dollars from ``[run]``) lasts; the
same budget holds a conversing round's tool calls and their seconds
(``engine.tool_round``). Each request carries a seed derived from ``[run] seed``
and its slot (``request_seed``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import as_component
from geak_core.api.errors import GeakError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, LLMError
from geak_core.engine.store import RunStore


class BudgetExhausted(GeakError):
    exit_code = 0


class RunStopped(Exception):
    """Raised inside lineages once the run must stop (budget, fatal error)."""


def slot_key(**slot: Any) -> str:
    blob = json.dumps(slot, sort_keys=True)
    return "slot:" + hashlib.sha256(blob.encode()).hexdigest()[:32]


SEED_RANGE = 2**31 - 2**16  # room for ``seed + i`` of split samples within a signed 32-bit int


def request_seed(run_seed: int, task_key: str, lineage: int, iteration: int) -> int:
    """The LLM request seed of one slot: fixed by ``[run] seed``, different for every slot."""
    blob = json.dumps([run_seed, task_key, lineage, iteration])
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big") % SEED_RANGE


@dataclass
class Budget:
    """What the run may spend (``[run]``; 0: unlimited) and has spent: LLM calls, tokens and
    dollars, and the tool calls a conversing round ran with the seconds they took."""

    max_calls: int = 0
    max_tokens: int = 0
    max_cost_usd: float = 0.0
    max_tool_calls: int = 0
    max_tool_seconds: float = 0.0
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    tool_calls: int = 0
    tool_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def resumed(cls, max_calls: int, max_tokens: int, max_cost_usd: float, store: RunStore, *,
                max_tool_calls: int = 0, max_tool_seconds: float = 0.0) -> Budget:
        """A budget already charged with what the store's recorded calls used: its LLM calls,
        and the tool calls its ``tool_call`` events say were run."""
        usage = store.usage()
        ran = [e["payload"] for e in store.iter_events("tool_call") if not e["payload"].get("refused")]
        return cls(max_calls, max_tokens, max_cost_usd, max_tool_calls, max_tool_seconds, calls=usage["calls"],
                   tokens=usage["prompt_tokens"] + usage["completion_tokens"],
                   cost_usd=usage["cost_usd"] or 0.0, tool_calls=len(ran),
                   tool_seconds=sum(float(p.get("seconds") or 0.0) for p in ran))

    def check(self) -> None:
        with self.lock:
            if self.max_calls and self.calls >= self.max_calls:
                raise BudgetExhausted(f"LLM call budget of {self.max_calls} reached")
            if self.max_tokens and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"token budget of {self.max_tokens} reached")
            if self.max_cost_usd and self.cost_usd >= self.max_cost_usd:
                raise BudgetExhausted(f"cost budget of ${self.max_cost_usd} reached")

    def add(self, response: ChatResponse) -> None:
        with self.lock:
            self.calls += 1
            self.tokens += response.usage.total_tokens
            self.cost_usd += response.cost_usd or 0.0

    def check_tools(self) -> None:
        """Raise ``BudgetExhausted`` once the run's tool calls or tool seconds are spent."""
        with self.lock:
            if self.max_tool_calls and self.tool_calls >= self.max_tool_calls:
                raise BudgetExhausted(f"tool call budget of {self.max_tool_calls} reached")
            if self.max_tool_seconds and self.tool_seconds >= self.max_tool_seconds:
                raise BudgetExhausted(f"tool time budget of {self.max_tool_seconds:g} s reached")

    def add_tool(self, seconds: float) -> None:
        with self.lock:
            self.tool_calls += 1
            self.tool_seconds += seconds


class RecordedLLM:
    """Wraps a backend: serves recorded slots, records live calls, enforces the budget."""

    def __init__(self, backend: Any, backend_name: str, store: RunStore, budget: Budget):
        self.backend = as_component("llm_backend", backend)
        self.name = backend_name
        self.store = store
        self.budget = budget
        self.identity = backend.identity()
        self._semaphore = threading.BoundedSemaphore(max(1, int(self.backend.max_concurrency)))

    def complete(self, request: ChatRequest, slot: dict[str, Any]) -> tuple[str, ChatResponse]:
        call_key = slot_key(**slot)
        recorded = self.store.find_llm_call(call_key)
        if recorded is not None:
            return recorded["id"], ChatResponse.from_dict(recorded["response"])
        if request.tools and not self.backend.tool_calling:
            raise FatalLLMError(f"backend {self.name!r} cannot call tools, and this request offers the "
                                f"model {len(request.tools)}", provider=str(self.identity.get("provider", "")))
        self.budget.check()
        call_id = uuid.uuid4().hex
        request.meta = {**request.meta, **slot}
        started = time.monotonic()
        with self._semaphore:
            try:
                response = self.backend.complete(request)
            except LLMError as exc:
                self.store.record_llm_call(
                    call_id=call_id, key=request.key(self.identity), call_key=call_key,
                    backend=self.name, identity=self.identity, request=request.to_dict(),
                    response=None, error=f"{type(exc).__name__}: {exc}",
                    latency_s=time.monotonic() - started, meta=slot,
                )
                raise
        self.budget.add(response)
        self.store.record_llm_call(
            call_id=call_id, key=request.key(self.identity), call_key=call_key, backend=self.name,
            identity=self.identity, request=request.to_dict(), response=response.to_dict(),
            error=None, latency_s=response.latency_s or (time.monotonic() - started),
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens, cost_usd=response.cost_usd, meta=slot,
        )
        return call_id, response


__all__ = ["Budget", "BudgetExhausted", "RecordedLLM", "RunStopped", "request_seed", "slot_key"]
