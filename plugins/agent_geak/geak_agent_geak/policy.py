"""The debugging-trap policy: which round a lineage plays next.

* no candidate yet (or just restarted): ``generate``;
* the lineage stands on a correct candidate: ``optimize``;
* it stands on a failed one: ``reflect``, until ``max_debug_attempts`` fixes in
  a row have failed; then it is caught in a debugging trap and ``restart``s
  with a fresh strategy;
* an optimisation step whose proposals all failed: the first failed proposal
  (with code) is fixed, up to ``max_perf_debug_attempts`` times; then it is
  dropped and the lineage goes on from its best correct candidate. A lineage
  with a correct candidate never restarts.

A round that yields a correct candidate puts the lineage on its best correct
one (the first correct, or a faster one: that is an improvement).
"""

from __future__ import annotations

from dataclasses import dataclass

from geak_core.api.components import PolicyBase, RoundPlan
from geak_core.api.lineage import LineageState
from geak_core.api.model import Candidate, EvalResult


@dataclass
class PolicyOptions:
    """Recipe keys of ``[policy]`` when ``name = "geak"``."""

    max_debug_attempts: int = 3  # failed fixes in a row before a restart (the debugging trap)
    max_perf_debug_attempts: int = 2  # fixes of a failed optimisation proposal before it is dropped

    def __post_init__(self) -> None:
        if self.max_debug_attempts < 0:
            raise ValueError(f"policy.max_debug_attempts must be 0 or more, got {self.max_debug_attempts}")
        if self.max_perf_debug_attempts < 0:
            raise ValueError(
                f"policy.max_perf_debug_attempts must be 0 or more, got {self.max_perf_debug_attempts}")


class GeakPolicy(PolicyBase):
    def __init__(self, options: PolicyOptions | None = None) -> None:
        self.options = options or PolicyOptions()

    def next_round(self, lineage: LineageState) -> RoundPlan:
        if lineage.last is None or lineage.last_result is None:
            return RoundPlan("generate")
        if lineage.last_result.correct:
            return RoundPlan("optimize")
        if lineage.fixing_optimized:
            return RoundPlan("reflect", lineage.perf_fixes + 1, self.options.max_perf_debug_attempts,
                             fixing_optimized=True)
        if lineage.failed_fixes >= self.options.max_debug_attempts:
            return RoundPlan("restart")
        return RoundPlan("reflect", lineage.failed_fixes + 1, self.options.max_debug_attempts)

    def after_round(self, lineage: LineageState, plan: RoundPlan,
                    judged: list[tuple[Candidate, EvalResult]]) -> bool:
        improved = False
        correct = [(c, r) for c, r in judged if r.call_ok and r.correct]
        for candidate, result in correct:  # proposal order: the first of equals wins
            faster = result.speedup is not None and (
                lineage.best_speedup is None or result.speedup > lineage.best_speedup)
            if not lineage.best_correct or faster:
                lineage.best, lineage.best_result = candidate, result
                improved = True
            lineage.best_correct = True
            if faster:
                lineage.best_speedup = result.speedup
        if correct:
            lineage.last, lineage.last_result = lineage.best, lineage.best_result
            lineage.failed_fixes = lineage.perf_fixes = 0
            lineage.fixing_optimized = False
            return improved
        failed = [(c, r) for c, r in judged if c.code]
        if plan.kind == "optimize":
            if failed and self.options.max_perf_debug_attempts > 0:
                lineage.last, lineage.last_result = failed[0]
                lineage.fixing_optimized, lineage.perf_fixes = True, 0
            return False  # otherwise the lineage stays on its best correct candidate
        if plan.fixing_optimized:
            lineage.perf_fixes += 1
            if failed:
                lineage.last, lineage.last_result = failed[0]
            if lineage.perf_fixes >= self.options.max_perf_debug_attempts:
                lineage.last, lineage.last_result = lineage.best, lineage.best_result
                lineage.fixing_optimized, lineage.perf_fixes = False, 0
            return False
        lineage.failed_fixes = lineage.failed_fixes + 1 if plan.kind == "reflect" else 0
        if failed:
            lineage.last, lineage.last_result = failed[0]
        return False
