"""The reflector: the prompt that asks to fix a failed candidate, and the lineage's memory.

A reflect prompt shows the failed module, the judge's trimmed report and, as
Reflexion does, the lineage's earlier failures: for each, what was tried (the
strategy the model named), why it failed (the judge's stage and reason) and
what the model said about it (its reply outside the code). ``memory`` says how
many of those earlier failures are shown, newest last. Where the lineage has a profiled
correct version, what the profiler found of it is shown too (``profile``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from geak_core.api.components import Reflection, ReflectorBase, RoundContext
from geak_core.api.llm import Message
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import profile_view

_FENCE = re.compile(r"```.*?(```|$)", re.DOTALL)
_STRATEGY_LINE = re.compile(r"^[#>*_ \t]*strategy[*_ \t]*:.*$", re.IGNORECASE | re.MULTILINE)


@dataclass
class ReflectorOptions:
    """Recipe keys of ``[reflector]`` when ``name = "geak"``."""

    memory: int = 3  # earlier failed attempts shown in a reflect prompt (0: only the one being fixed)
    report_chars: int = 2500  # tail of the judge's error output shown
    # The recipe's knowledge packs in fix prompts too, as in generate and optimize prompts
    # (a hardware-specific error, FNUZ fp8 or an AMD-only knob, is fixed with the facts at
    # hand), at most knowledge_chars characters of them: the packs in order, the last one
    # that fits cut at a line.
    knowledge: bool = True
    knowledge_chars: int = 8000

    def __post_init__(self) -> None:
        if self.memory < 0:
            raise ValueError(f"reflector.memory must be 0 or more, got {self.memory}")
        if self.report_chars < 200:
            raise ValueError(f"reflector.report_chars must be at least 200, got {self.report_chars}")
        if self.knowledge_chars < 0:
            raise ValueError(f"reflector.knowledge_chars must be 0 or more, got {self.knowledge_chars}")


def fit_knowledge(packs: list[dict[str, str]], limit: int) -> list[dict[str, str]]:
    """The packs (``{"title", "text"}``) in order within ``limit`` characters of text: whole
    packs while they fit, then the next one cut at its last whole line (dropped if nothing of
    it fits), then none."""
    kept: list[dict[str, str]] = []
    left = limit
    for pack in packs:
        text = pack.get("text", "")
        if len(text) <= left:
            kept.append(pack)
            left -= len(text)
            continue
        head = text[:left]
        cut = head[: head.rfind("\n")].rstrip() if "\n" in head else ""  # whole lines only
        if cut:
            kept.append({**pack, "text": cut + "\n(cut to fit the prompt)"})
        break
    return kept


def error_report(result: EvalResult, limit: int = 2500) -> str:
    """What the reflector is shown: the failing stage, the reason, the trimmed error, mismatches."""
    parts = [f"failed stage: {result.failed_stage or 'unknown'}"]
    if result.reason:
        parts.append(f"reason: {result.reason}")
    for m in result.mismatches[:3]:
        parts.append("mismatch: " + json.dumps(m, default=str)[:600])
    if result.error:
        parts.append("error output (tail):\n" + result.error[-limit:])
    return "\n".join(parts)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class GeakReflector(ReflectorBase):
    def __init__(self, options: ReflectorOptions | None = None) -> None:
        self.options = options or ReflectorOptions()

    def remember(self, iteration: int, kind: str, candidate: Candidate, result: EvalResult,
                 reply: str) -> Reflection:
        why = result.failed_stage or "unknown"
        if result.reason:
            why += f": {result.reason.strip().splitlines()[0] if result.reason.strip() else ''}"
        prose = _STRATEGY_LINE.sub("", _FENCE.sub("", reply))
        return Reflection(iteration=iteration, kind=kind, candidate_id=candidate.id,
                          strategy=_one_line(candidate.strategy, 200), failure=_one_line(why, 300),
                          note=_one_line(prose, 400))

    def messages(self, round: RoundContext) -> list[Message]:
        lineage = round.lineage
        last, result = lineage.last, lineage.last_result
        if last is None or result is None:
            raise ValueError("a reflect round needs a failed candidate to fix")
        earlier = [r for r in lineage.reflections if r.candidate_id != last.id]
        memory = earlier[-self.options.memory:] if self.options.memory else []
        user = round.render(
            "reflect", task=round.view, code=last.code,
            report=error_report(result, self.options.report_chars), call_ok=result.call_ok,
            attempt=round.plan.attempt, max_attempts=round.plan.max_attempts,
            fixing_optimized=round.plan.fixing_optimized, reflections=memory,
            knowledge=fit_knowledge(round.knowledge, self.options.knowledge_chars) if self.options.knowledge else [],
            hardware=round.hardware, examples=round.examples,
            example=round.examples[0] if round.examples else None,
            profile=profile_view(round.profile) if round.profile else None,
        )
        return [Message("system", round.system), Message("user", user)]
