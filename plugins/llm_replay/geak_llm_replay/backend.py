"""Serving replies without any LLM: from a recorded run, or from a script.

* ``strict``: the reply recorded for exactly this request (same identity,
  messages and sampling fields, the key of ``ChatRequest.key``). A request
  never recorded is a ``FatalLLMError`` naming the nearest recorded one and
  how it differs. Re-judging a recorded run on another machine uses this.
* ``sequential``: recorded replies in recorded order, one queue per group of
  ``meta`` fields (``sequence_by``, default task, lineage and purpose), for
  replaying a run whose prompts changed a little (a template edit).
* ``scripted``: replies written by hand, chosen by matching ``request.meta``;
  offline demonstrations and tests use it. An entry may script tool calls.
"""

from __future__ import annotations

import difflib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import LLMBackendBase
from geak_core.api.errors import InputError
from geak_core.api.llm import ChatRequest, ChatResponse, FatalLLMError, ToolCall, Usage

from geak_llm_replay.sources import (
    RecordedCall,
    ScriptEntry,
    identity_label,
    load_recorded,
    load_script,
)

PROVIDER = "replay"
_SAMPLING = ("n", "temperature", "top_p", "max_tokens", "seed")


@dataclass
class ReplayOptions:
    """Recipe keys of ``[llm] backend = "replay"``."""

    source: str = field(metadata={"path": True})  # run directory, store.sqlite, .jsonl of calls; or the script for "scripted"
    mode: str = field(default="strict", metadata={"choices": ["strict", "sequential", "scripted"]})
    # Which recorded identity to reproduce when the source holds several: the model name,
    # "provider:model", or the identity's JSON.
    identity: str | None = None
    sequence_by: list[str] = field(default_factory=lambda: ["task", "lineage", "purpose"])
    max_concurrency: int = 8

    def __post_init__(self) -> None:
        if not self.source:
            raise ValueError("source must name a run directory, a store, a .jsonl file or a script")
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if self.mode == "sequential" and not self.sequence_by:
            raise ValueError("sequence_by must name at least one meta field")


def _matches_identity(selector: str, identity: dict[str, Any]) -> bool:
    model = str(identity.get("model", ""))
    provider = str(identity.get("provider", ""))
    if selector.lstrip().startswith("{"):
        try:
            return json.loads(selector) == identity
        except ValueError:
            return False
    return selector in (model, f"{provider}:{model}")


def _meta_value_matches(wanted: Any, actual: Any) -> bool:
    if isinstance(wanted, list):
        return any(_meta_value_matches(w, actual) for w in wanted)
    if actual is None:
        return False
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return wanted == actual
    if str(wanted) == str(actual):
        return True
    # "softmax" matches the task key "rocm/softmax"
    return isinstance(actual, str) and "/" in actual and actual.rsplit("/", 1)[1] == str(wanted)


def _describe_meta(meta: dict[str, Any]) -> str:
    shown = {k: meta[k] for k in ("task", "lineage", "iteration", "purpose") if k in meta}
    return " ".join(f"{k}={v}" for k, v in (shown or meta).items()) or "no meta"


class ReplayBackend(LLMBackendBase):
    """``LLMBackend`` that answers from recordings or a script. It serves tool calls as they
    were recorded or scripted (``tool_calls`` of a script entry)."""

    tool_calling = True

    def __init__(self, options: ReplayOptions) -> None:
        self.options = options
        self.mode = options.mode
        self.max_concurrency = options.max_concurrency
        self._lock = threading.Lock()
        self._cursor: dict[Any, int] = {}
        self._identity: dict[str, Any]
        if self.mode == "scripted":
            self.path, self.entries = load_script(options.source)
            self._served: dict[int, int] = {}
            self._identity = {"provider": PROVIDER, "base_url": "", "model": f"script:{self.path.name}"}
            return
        self.path, calls = load_recorded(options.source)
        if not calls:
            raise InputError(f"{self.path}: no successful recorded calls to replay")
        self._identity, self.calls = self._select_identity(calls)
        self._by_key: dict[str, list[RecordedCall]] = {}
        for call in self.calls:
            for key in call.keys:
                self._by_key.setdefault(key, []).append(call)
        self._groups: dict[tuple[str, ...], list[RecordedCall]] = {}
        for call in self.calls:
            self._groups.setdefault(self._group(call.meta), []).append(call)

    # -- LLMBackend --------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def complete(self, request: ChatRequest) -> ChatResponse:
        if self.mode == "strict":
            return self._strict(request)
        if self.mode == "sequential":
            return self._sequential(request)
        return self._scripted(request)

    # -- recorded ----------------------------------------------------------

    def _select_identity(self, calls: list[RecordedCall]) -> tuple[dict[str, Any], list[RecordedCall]]:
        identities: dict[str, dict[str, Any]] = {}
        for call in calls:
            identities.setdefault(identity_label(call.identity), call.identity)
        selector = self.options.identity
        if selector is not None:
            chosen = [i for i in identities.values() if _matches_identity(selector, i)]
            if len(chosen) != 1:
                raise InputError(
                    f"replay: identity {selector!r} matches {len(chosen)} of the identities recorded "
                    f"in {self.path}: {', '.join(identities)}"
                )
            label = identity_label(chosen[0])
            return chosen[0], [c for c in calls if identity_label(c.identity) == label]
        if len(identities) > 1 and self.mode == "strict":
            raise InputError(
                f"replay: {self.path} holds calls of several backends; choose one with "
                f"identity = (the model name, \"provider:model\" or the JSON): {', '.join(identities)}"
            )
        return next(iter(identities.values())), calls

    def _take(self, cursor_key: Any, queue: list[RecordedCall], *, repeat_last: bool) -> RecordedCall | None:
        with self._lock:
            position = self._cursor.get(cursor_key, 0)
            if position >= len(queue):
                return queue[-1] if repeat_last and queue else None
            self._cursor[cursor_key] = position + 1
            return queue[position]

    def _strict(self, request: ChatRequest) -> ChatResponse:
        key = request.key(self._identity)
        queue = self._by_key.get(key)
        if not queue:
            raise FatalLLMError(self._miss_message(request, key), provider=PROVIDER)
        # Identical requests made several times get the recorded replies in order, then the last.
        call = self._take(("key", key), queue, repeat_last=True)
        assert call is not None
        return ChatResponse.from_dict(call.response)

    def _group(self, meta: dict[str, Any]) -> tuple[str, ...]:
        return tuple(str(meta.get(name)) for name in self.options.sequence_by)

    def _sequential(self, request: ChatRequest) -> ChatResponse:
        group = self._group(request.meta or {})
        described = ", ".join(f"{k}={v}" for k, v in zip(self.options.sequence_by, group, strict=False))
        queue = self._groups.get(group)
        if not queue:
            known = "; ".join(
                ", ".join(f"{k}={v}" for k, v in zip(self.options.sequence_by, g, strict=False))
                for g in list(self._groups)[:5]
            )
            raise FatalLLMError(
                f"replay: {self.path} has no recorded calls for {described} (recorded groups include: "
                f"{known})",
                provider=PROVIDER,
            )
        call = self._take(("group", group), queue, repeat_last=False)
        if call is None:
            raise FatalLLMError(
                f"replay: {self.path} recorded only {len(queue)} call(s) for {described}; the "
                "replayed run asks for more",
                provider=PROVIDER,
            )
        return ChatResponse.from_dict(call.response)

    def _miss_message(self, request: ChatRequest, key: str) -> str:
        head = (
            f"replay: no recorded reply for this request ({_describe_meta(request.meta or {})}, "
            f"key {key}) in {self.path}"
        )
        nearest = self._nearest(request)
        if nearest is None:
            return head
        differences = self._differences(nearest.request, request)
        return (
            f"{head}. Nearest recorded request: call {nearest.id} ({_describe_meta(nearest.meta)}), "
            f"which differs in {'; '.join(differences) or 'nothing but its key'}"
        )

    def _nearest(self, request: ChatRequest) -> RecordedCall | None:
        wanted = "\n".join(m.content for m in request.messages)[-20000:]
        meta = request.meta or {}

        def score(call: RecordedCall) -> tuple[int, float]:
            same_slot = sum(
                1 for k in ("task", "lineage", "iteration", "purpose")
                if k in meta and str(call.meta.get(k)) == str(meta[k])
            )
            text = "\n".join(m.content for m in call.request.messages)[-20000:]
            return same_slot, difflib.SequenceMatcher(None, text, wanted, autojunk=False).quick_ratio()

        return max(self.calls, key=score, default=None)

    @staticmethod
    def _differences(recorded: ChatRequest, wanted: ChatRequest) -> list[str]:
        out = []
        for name in _SAMPLING:
            a, b = getattr(recorded, name), getattr(wanted, name)
            if a != b:
                out.append(f"{name} (recorded {a!r}, requested {b!r})")
        if len(recorded.messages) != len(wanted.messages):
            out.append(f"number of messages (recorded {len(recorded.messages)}, requested {len(wanted.messages)})")
        if [t.to_dict() for t in recorded.tools] != [t.to_dict() for t in wanted.tools]:
            out.append(f"tools offered (recorded {[t.name for t in recorded.tools]}, requested "
                       f"{[t.name for t in wanted.tools]})")
        elif recorded.tool_choice != wanted.tool_choice:
            out.append(f"tool_choice (recorded {recorded.tool_choice!r}, requested {wanted.tool_choice!r})")
        for i, (a, b) in enumerate(zip(recorded.messages, wanted.messages, strict=False)):
            if a.role != b.role:
                out.append(f"messages[{i}] role (recorded {a.role!r}, requested {b.role!r})")
            elif a.content != b.content:
                at = next((j for j, (x, y) in enumerate(zip(a.content, b.content, strict=False)) if x != y),
                          min(len(a.content), len(b.content)))
                out.append(
                    f"messages[{i}] ({a.role}) from character {at}: recorded "
                    f"{a.content[at:at + 60]!r}, requested {b.content[at:at + 60]!r}"
                )
                break
            elif a.canonical() != b.canonical():
                out.append(f"messages[{i}] ({a.role}) in its tool calls or result (recorded "
                           f"{a.to_dict()}, requested {b.to_dict()})"[:400])
                break
        return out

    # -- scripted ----------------------------------------------------------

    def _matches(self, entry: ScriptEntry, request: ChatRequest) -> bool:
        meta = request.meta or {}
        for name, wanted in entry.match.items():
            if name == "prompt_contains":
                last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
                needles = wanted if isinstance(wanted, list) else [wanted]
                if not all(str(n) in last_user for n in needles):
                    return False
            elif not _meta_value_matches(wanted, meta.get(name)):
                return False
        return True

    def _scripted(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            candidates = [
                e for e in self.entries
                if self._matches(e, request) and (e.times is None or self._served.get(e.index, 0) < e.times)
            ]
            if not candidates:
                raise FatalLLMError(
                    f"replay: no entry of the script {self.path} matches the request "
                    f"({_describe_meta(request.meta or {})}); add a [[reply]] whose match fits, or one "
                    "without match as a default",
                    provider=PROVIDER,
                )
            entry = max(candidates, key=lambda e: (len(e.match), -e.index))
            self._served[entry.index] = self._served.get(entry.index, 0) + 1
            start = self._cursor.get(("entry", entry.index), 0)
            texts = [entry.texts[(start + i) % len(entry.texts)] for i in range(request.n)]
            self._cursor[("entry", entry.index)] = start + request.n
        calls = [
            [ToolCall(c.id or f"call_{entry.index}_{start + i}_{k}", c.name, dict(c.arguments))
             for k, c in enumerate(entry.tool_calls)]
            for i in range(request.n)
        ]
        return ChatResponse(
            texts=texts,
            usage=Usage(entry.usage.get("prompt_tokens", 0), entry.usage.get("completion_tokens", 0)),
            model=self._identity["model"],
            latency_s=0.0,
            cost_usd=None,
            raw={"script": str(self.path), "entry": entry.where},
            finish_reasons=[entry.finish_reason] * request.n,
            tool_calls=calls,
        )


def build(options: ReplayOptions) -> ReplayBackend:
    if options is None:
        raise InputError("replay backend needs options ([llm] source = ...)")
    return ReplayBackend(options)
