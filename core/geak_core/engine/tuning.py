"""What the agent and ``geak-core tune`` share about tuning a correct candidate.

* ``untimed_reason(result)``: a tuner keeps the fastest variant, so a candidate whose speed
  the judge did not measure (the Triton interpreter on a CPU checks correctness only) is
  not tuned: nothing could say which variant is faster. The reason is said, never silent.
* ``kept_variant(tuned, parent)``: the tuner's best variant, if it beats the tuned
  candidate's own measured speedup.
* ``knob_lines(changes)``: a variant's one-line ``changes`` as one line per changed knob
  (``add_kernel.BLOCK_SIZE 256->512``), as a prompt or a record shows them, and
  ``prompt_knobs`` at most so many of them.
* ``TuneLedger``: what tuning has spent of a task's budget (``[tuner] candidates`` and
  ``seconds``), over all its lineages.
* ``tune_candidate`` and ``tune_record``: one judged candidate tuned from anywhere and the
  record of it, as ``geak-core tune`` writes it and the judge's ``tune`` tool answers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from geak_core.api.components import TuneBudget, TunedVariant, TuneResult
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import Task


def untimed_reason(result: EvalResult) -> str | None:
    """Why the variants of the candidate judged ``result`` cannot be compared (None: they
    can, its speed was measured). Only a correct candidate is ever tuned."""
    if not (result.call_ok and result.correct):
        return "not tuned: the candidate is not correct"
    if result.performance_measured and result.speedup is not None:
        return None
    why = result.performance_note or "the judge timed nothing"
    why = why[len("not measured: "):] if why.startswith("not measured: ") else why
    return f"tuning skipped: speed not measured, so no variant could be found faster ({why})"


def measured_speedup(result: EvalResult | None) -> float | None:
    """``result``'s speedup if it is correct and was timed, else None."""
    if result is None or not (result.call_ok and result.correct) or not result.performance_measured:
        return None
    return result.speedup


def kept_variant(tuned: TuneResult, parent: EvalResult) -> TunedVariant | None:
    """The tuner's best variant if it is correct, timed and faster than the tuned candidate."""
    best = tuned.best
    after = measured_speedup(best.result) if best is not None else None
    before = measured_speedup(parent)
    if best is None or after is None or (before is not None and after <= before):
        return None
    return best


def knob_lines(changes: str) -> list[str]:
    """``"add_kernel.BLOCK_SIZE 256->512, add_kernel.num_warps 4->8"`` as one line per knob."""
    return [part.strip() for part in changes.split(", ") if part.strip()]


def prompt_knobs(lines: list[str], limit: int) -> tuple[str, ...]:
    """At most ``limit`` of a variant's knob lines for a prompt: all of them if they fit, else
    the first ones and a last line saying how many more knobs changed."""
    if len(lines) <= limit:
        return tuple(lines)
    shown = max(0, limit - 1)
    return (*lines[:shown], f"(and {len(lines) - shown} more knobs)")


@dataclass
class TuneLedger:
    """One task's tuning budget and what its lineages have spent of it. Variants are
    reserved before a tuning starts, so that lineages tuning at once never together judge
    more than ``candidates``; seconds are counted when a tuning ends."""

    candidates: int
    seconds: float
    spent_candidates: int = 0
    spent_seconds: float = 0.0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._tuned: set[str] = set()

    def claim(self, code_hash: str) -> bool:
        """True the first time code with this hash is claimed for tuning in the task (it is
        tuned once, whichever lineage reaches it first)."""
        with self._lock:
            first = code_hash not in self._tuned
            self._tuned.add(code_hash)
            return first

    def take(self) -> TuneBudget | None:
        """The budget of the next tuning (all that is left, reserved), or None when spent."""
        with self._lock:
            left = self.candidates - self.spent_candidates
            seconds = self.seconds - self.spent_seconds
            if left <= 0 or seconds <= 0:
                return None
            self.spent_candidates += left
            return TuneBudget(candidates=left, seconds=seconds)

    def settle(self, granted: TuneBudget | None, judged: int, seconds: float) -> None:
        """A tuning given ``granted`` (None: replayed from the store) judged ``judged``
        variants in ``seconds``: the unused reservation goes back."""
        with self._lock:
            self.spent_candidates += judged - (granted.candidates if granted is not None else 0)
            self.spent_seconds += seconds

    def spent_note(self) -> str:
        return (f"tuning skipped: the task's tuning budget ([tuner] candidates = {self.candidates}, "
                f"seconds = {self.seconds:g}) is spent")


def tune_record(task: Task, candidate: Candidate, untuned: EvalResult, variants: list[TunedVariant],
                kept: TunedVariant | None, notes: list[str], seconds: float) -> dict[str, Any]:
    """The record of one tuned candidate (``geak-core tune``'s ``-o/--out``): its verdict,
    its speedup untuned and tuned (the kept variant's, or its own when none was kept), the
    kept variant's changed knobs (one a line), diff and code, how many variants were judged
    and how many were correct."""
    judged = [v for v in variants if v.result is not None]
    before = measured_speedup(untuned)
    return {
        "task": task.id,
        "suite": task.suite,
        "candidate": candidate.id,
        "call_ok": untuned.call_ok,
        "correct": untuned.correct,
        "failed_stage": untuned.failed_stage,
        "reason": untuned.reason,
        "flags": untuned.flags,
        "mode": untuned.mode,
        "speedup_method": untuned.speedup_method,
        "untuned_speedup": before,
        "tuned_speedup": measured_speedup(kept.result) if kept is not None else before,
        "variants_judged": len(judged),
        "variants_correct": sum(bool(v.result and v.result.correct) for v in judged),
        "kept": kept.candidate.id if kept is not None else None,
        "changes": knob_lines(kept.changes) if kept is not None else [],
        "diff": kept.diff if kept is not None else "",
        "tuned_code": kept.candidate.code if kept is not None else None,
        "notes": notes,
        "seconds": round(seconds, 3),
    }


def tune_candidate(task: Task, candidate: Candidate, untuned: EvalResult, tuner: Any, judge: Any,
                   budget: TuneBudget) -> tuple[dict[str, Any], TunedVariant | None]:
    """Tune one judged candidate (if it can be): its record, and the variant kept (None when
    none was faster, or the candidate could not be tuned)."""
    reason = untimed_reason(untuned)
    if reason is not None:
        return tune_record(task, candidate, untuned, [], None, [reason], 0.0), None
    started = time.monotonic()
    result = tuner.tune(task, candidate, judge, budget)
    kept = kept_variant(result, untuned)
    return tune_record(task, candidate, untuned, result.variants, kept, list(result.notes),
                       time.monotonic() - started), kept
