"""Turning what the children reported into one verdict (judge side, no candidate code).

The judge collects failures as (stage, reason) pairs while reading the
candidate's frames; the verdict names the earliest stage in
``model.STAGES`` and mentions the others, so a cheat that is also wrong
reports both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from geak_core.api.model import STAGES

MAX_ERROR_LINES = 40
MAX_ERROR_CHARS = 6000


@dataclass
class Failure:
    stage: str
    reason: str
    error: str | None = None
    mismatches: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Verdict:
    failures: list[Failure] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    ran: bool = False  # every planned run executed without raising or crashing
    _keys: set[str] = field(default_factory=set)

    def fail(self, stage: str, reason: str, error: str | None = None,
             mismatches: list[dict[str, Any]] | None = None, key: str | None = None) -> None:
        """Record a failure; with ``key``, only the first failure of that kind counts."""
        key = key or f"{stage}:{reason}"
        if key in self._keys:
            return
        self._keys.add(key)
        self.failures.append(Failure(stage, reason, error, mismatches or []))

    def flag(self, name: str) -> None:
        if name not in self.flags:
            self.flags.append(name)

    def has(self, stage: str) -> bool:
        return any(f.stage == stage for f in self.failures)

    @property
    def first(self) -> Failure | None:
        if not self.failures:
            return None
        return min(self.failures, key=lambda f: STAGES.index(f.stage))

    def reason(self) -> str | None:
        first = self.first
        if first is None:
            return None
        others = [f.reason for f in self.failures if f is not first]
        text = first.reason
        if others:
            text += "; also: " + "; ".join(others[:3])
            if len(others) > 3:
                text += f" (and {len(others) - 3} more)"
        return text


def name_published_protocol(extra: dict[str, Any], result: Any) -> None:
    """Name, in a rejected verdict, the benchmark protocol it would have passed.

    A task that follows a published benchmark's protocol names it (``extra["protocol"]``)
    and the last of the judge's stages that protocol's own harness checks
    (``extra["protocol_last_stage"]``: KernelBench's five draws at its tolerances are the
    judge's ``stage1``). A candidate that ran and failed only in a later stage (the
    outlier inputs, the anti-cheat checks, timing) passes that protocol and not the
    judge's stricter checks: its verdict is flagged ``passes_<protocol>_protocol``.
    """
    protocol, last = extra.get("protocol"), extra.get("protocol_last_stage")
    stage = result.failed_stage
    if not (isinstance(protocol, str) and last in STAGES and stage in STAGES and result.call_ok):
        return
    if STAGES.index(stage) > STAGES.index(last):
        flag = f"passes_{protocol}_protocol"
        if flag not in result.flags:
            result.flags.append(flag)


def trim_traceback(text: str | None) -> str | None:
    """The relevant tail of a traceback: the last frames and the exception line."""
    if not text:
        return text
    lines = text.rstrip().splitlines()
    if len(lines) > MAX_ERROR_LINES:
        lines = ["[... earlier frames trimmed ...]"] + lines[-MAX_ERROR_LINES:]
    out = "\n".join(lines)
    if len(out) > MAX_ERROR_CHARS:
        out = "[...]\n" + out[-MAX_ERROR_CHARS:]
    return out


def describe_exception(frame: dict[str, Any]) -> str:
    name = frame.get("exception", "Exception")
    message = (frame.get("message") or "").strip().splitlines()
    first = message[0][:300] if message else ""
    lowered = (name + " " + " ".join(message)).lower()
    if name == "OutOfMemoryError" or "out of memory" in lowered:
        return f"ran out of GPU memory ({name}: {first})"
    if "cuda error" in lowered or "hip error" in lowered or "illegal memory access" in lowered:
        return f"GPU error ({name}: {first})"
    if name in ("CompilationError", "CompileTimeAssertionFailure", "PTXASError") or "compilationerror" in lowered:
        return f"the kernel failed to compile ({name}: {first})"
    if name == "PermissionError" or "[errno 13]" in lowered or "[errno 1]" in lowered:
        return (f"{name}: {first} (the judge's sandbox refused: a candidate may write only its own "
                "folder and reach no network, no other process)")
    if name == "MemoryError":
        return f"{name}: {first} (the host memory of a candidate's process is limited: option child_memory_mb)"
    return f"{name}: {first}" if first else name
