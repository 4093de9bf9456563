"""What the model was asked and answered: a run's candidates with their prompts, replies,
extracted code and verdicts, from the run store (``geak-core runs log``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from geak_core.errors import InputError
from geak_core.model import EvalResult
from geak_core.store import RunStore


@dataclass
class Entry:
    """One candidate of a run: where it sits, what the LLM call asked and answered, its code
    and its latest verdict (None: not judged yet)."""

    candidate_id: str
    task_id: str
    lineage: int | None
    iteration: int | None
    origin: str | None
    strategy: str
    parent_id: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    reply: str | None = None
    error: str | None = None  # the LLM call's error, when it failed
    code: str = ""
    verdict: EvalResult | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate_id": self.candidate_id, "task_id": self.task_id, "lineage": self.lineage,
            "iteration": self.iteration, "origin": self.origin, "strategy": self.strategy,
            "parent_id": self.parent_id, "messages": self.messages, "reply": self.reply,
            "llm_error": self.error, "code": self.code,
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
        }


def _reply_for(texts: list[str], code: str) -> str | None:
    """Of a call's completions, the one the candidate's code came from (the first if none
    holds it verbatim)."""
    if not texts:
        return None
    stripped = code.strip()
    for text in texts:
        if stripped and stripped in text:
            return text
    return texts[0]


def entries(store: RunStore, task: str | None = None, candidate: str | None = None) -> list[Entry]:
    """The run's candidates in order (task, lineage, round, then as recorded), with what
    produced them; ``task`` / ``candidate`` keep one task or one candidate. An unknown
    task or candidate is an :class:`InputError` naming the known ones."""
    candidates = store.candidates()
    if task is not None:
        known = sorted({c.task_id for c in candidates})
        if task not in known:
            raise InputError(f"no candidate of task {task!r} in this run (tasks: {', '.join(known) or 'none'})")
        candidates = [c for c in candidates if c.task_id == task]
    if candidate is not None:
        chosen = [c for c in candidates if c.id == candidate]
        if not chosen:
            sample = ", ".join(c.id for c in candidates[:5])
            raise InputError(f"no candidate {candidate!r} in this run (for instance: {sample or 'none'})")
        candidates = chosen
    calls = {call["id"]: call for call in store.llm_calls()}
    verdicts: dict[str, EvalResult] = {}
    for candidate_id, result in store.evaluations():
        verdicts[candidate_id] = result  # in order: the latest stays
    order = {c.id: i for i, c in enumerate(candidates)}
    candidates.sort(key=lambda c: (c.task_id, c.lineage if c.lineage is not None else -1,
                                   c.iteration if c.iteration is not None else -1, order[c.id]))
    out = []
    for c in candidates:
        call = calls.get(c.llm_call_id or "")
        response = (call or {}).get("response") or {}
        texts = [t for t in response.get("texts", []) if isinstance(t, str)] if isinstance(response, dict) else []
        out.append(Entry(
            candidate_id=c.id, task_id=c.task_id, lineage=c.lineage, iteration=c.iteration, origin=c.origin,
            strategy=c.strategy, parent_id=c.parent_id,
            messages=list(((call or {}).get("request") or {}).get("messages") or []),
            reply=_reply_for(texts, c.code), error=(call or {}).get("error"), code=c.code,
            verdict=verdicts.get(c.id),
        ))
    return out


def verdict_text(result: EvalResult | None) -> str:
    if result is None:
        return "not judged"
    if result.correct:
        speed = f", speedup {result.speedup:.3f}x" if result.speedup is not None else ""
        return f"correct{speed}"
    kind = "wrong" if result.call_ok else "failed"
    reason = (result.reason or "").strip()
    return f"{kind} ({result.failed_stage}): {reason}" if reason else f"{kind} ({result.failed_stage})"


def render(items: list[Entry], style: Any = None) -> str:
    """The transcript as text; ``style(text, **click_style_kwargs)`` colours headings (None:
    plain)."""
    paint = style or (lambda text, **_: text)
    lines: list[str] = []
    for e in items:
        where = f"lineage {e.lineage}, round {e.iteration}" if e.lineage is not None else "no lineage"
        lines.append(paint(f"=== {e.task_id}  {where}  {e.origin or '?'}  [{e.candidate_id}]", bold=True))
        if e.strategy:
            lines.append(f"strategy: {e.strategy}")
        if e.parent_id:
            lines.append(f"builds on: {e.parent_id}")
        if not e.messages and e.reply is None:
            lines.append("(no LLM call recorded for this candidate)")
        for message in e.messages:
            lines.append(paint(f"--- prompt ({message.get('role', '?')})", fg="cyan"))
            lines.append(str(message.get("content", "")).rstrip())
        if e.error:
            lines.append(paint("--- the call failed", fg="red"))
            lines.append(e.error.rstrip())
        if e.reply is not None:
            lines.append(paint("--- reply", fg="cyan"))
            lines.append(e.reply.rstrip())
        lines.append(paint("--- code (extracted)", fg="cyan"))
        lines.append(e.code.rstrip())
        colour = "green" if e.verdict is not None and e.verdict.correct else "yellow"
        lines.append(paint(f"--- verdict: {verdict_text(e.verdict)}", fg=colour))
        lines.append("")
    return "\n".join(lines)
