"""A lineage's state: what its next round builds on, its best so far and its memory.

The loop (``geak_core.engine.agent``) owns one ``LineageState`` per task and lineage.
The policy reads it to choose the next round and advances it with each round's
verdicts; generators and reflectors only read it. The one transition that is
not a verdict, abandoning an approach after a debugging trap, is ``restart``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from geak_core.api.components import Reflection, TuningReport
from geak_core.api.model import Attempt, Candidate, EvalResult
from geak_core.api.profiling import ProfileRecord
from geak_core.api.scaling import Judged
from geak_core.api.tasks import Task


@dataclass
class LineageState:
    task: Task
    lineage: int
    # the candidate the next round builds on: the failed one to fix, or the best correct one
    last: Candidate | None = None
    last_result: EvalResult | None = None
    best: Candidate | None = None  # the best correct candidate so far
    best_result: EvalResult | None = None
    best_speedup: float | None = None
    best_correct: bool = False
    failed_fixes: int = 0  # failed fixes in a row of the current approach (debugging trap)
    fixing_optimized: bool = False  # ``last`` is a failed optimisation proposal being fixed
    perf_fixes: int = 0  # failed fixes of that proposal
    abandoned: list[str] = field(default_factory=list)  # strategies dropped by restarts
    reflections: list[Reflection] = field(default_factory=list)  # memory of failed candidates
    rounds_without_gain: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    results: list[tuple[int, str, EvalResult]] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    tunings: list[TuningReport] = field(default_factory=list)  # what each tuning found, in order
    profiles: list[ProfileRecord] = field(default_factory=list)  # profiles with counters, in order
    stop_reason: str | None = None  # why it optimizes no more before its last round (the roofline)

    def profile_of(self, candidate_id: str | None) -> ProfileRecord | None:
        """The latest profile of the candidate ``candidate_id``, or None."""
        return next((p for p in reversed(self.profiles) if p.candidate_id == candidate_id), None)

    def restart(self, iteration: int) -> str:
        """Abandon the current approach (a debugging trap); returns its strategy."""
        strategy = (self.last.strategy if self.last else "") or "(unnamed approach)"
        self.abandoned.append(strategy)
        self.failed_fixes = 0
        self.last, self.last_result = None, None
        self.attempts.append(Attempt(self.task.id, self.lineage, iteration, "restart", None,
                                     note="debugging trap: approach abandoned"))
        return strategy

    def record(self, iteration: int, kind: str, candidate: Candidate, result: EvalResult) -> None:
        """Keep one verdict of this lineage (for the task summary and the scaling curves)."""
        self.results.append((self.lineage, candidate.id, result))
        self.judged.append(Judged.from_result(self.task.id, self.lineage, iteration, result))
        self.attempts.append(Attempt(self.task.id, self.lineage, iteration, kind, candidate.id,
                                     result.call_ok, result.correct, result.speedup,
                                     note=result.reason or ""))
