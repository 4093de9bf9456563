"""The ``grid`` tuner: variants of a candidate's launch configuration over the range the device
allows, coarse to fine, judged by the run's own judge, the fastest correct one kept."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from geak_core.api.components import (
    EvalJob,
    EvaluatorBase,
    TuneBudget,
    TunedVariant,
    TunerBase,
    TuneResult,
)
from geak_core.api.model import Candidate

from geak_tuner_grid.diff import variant_diff
from geak_tuner_grid.variants import Limits, Point, Search, Variant, coarse_count

if TYPE_CHECKING:
    from geak_core.api.components import Evaluator, HardwareProfile
    from geak_core.api.tasks import Task


@dataclass
class GridTunerOptions:
    dtype_bytes: int = field(default=2, metadata={"choices": [1, 2, 4]})
    """Element size the cheap model assumes for loads and ``tl.dot`` operands (2: fp16/bf16)."""


class GridTuner(TunerBase):
    """Searches the knobs ``geak_tuner_grid.knobs`` finds over the whole range the run's
    hardware profile allows (``Limits()``: an H100's, when the run resolved none), coarse to
    fine (``geak_tuner_grid.variants.Search``): the cheap model's best configurations of
    different tiles first, then the neighbours of the fastest variant judged so far."""

    def __init__(self, options: GridTunerOptions | None = None) -> None:
        self.options = options or GridTunerOptions()
        self.profile: HardwareProfile | None = None

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        self.profile = profile

    def tune(self, task: Task, candidate: Candidate, judge: Evaluator | None,
             budget: TuneBudget) -> TuneResult:
        limits = Limits.from_profile(self.profile) if self.profile else Limits()
        search = Search(candidate.code, limits, dtype_bytes=self.options.dtype_bytes)
        result = TuneResult()
        if not self.profile:
            result.notes.append("no hardware profile: an H100's limits assumed")
        if not search.knobs:
            result.notes.append("no tunable knobs found")
            return result
        if not search.legal:
            result.notes.append(f"no configuration of its knobs fits the device (pruned: {search.pruned})")
            return result
        if judge is None:
            for variant in search.plan(budget.candidates):
                self._add(result, candidate, variant)
            self._note_left_out(result, search)
            result.notes.append("no judge: the variants are ranked, not judged")
            return result
        self._search(task, candidate, search, result, judge, budget)
        self._note_left_out(result, search)
        timed = [v for v in result.variants if _speed(v) is not None]
        if any(v.result is not None and v.result.correct for v in result.variants) and not timed:
            result.notes.append("correct variants were not timed (no GPU): no speed to compare")
        result.best = max(timed, key=lambda v: _speed(v) or 0.0, default=None)
        return result

    @staticmethod
    def _add(result: TuneResult, candidate: Candidate, variant: Variant) -> TunedVariant:
        child = Candidate(id=f"{candidate.id}-tune{len(result.variants) + 1}", task_id=candidate.task_id,
                          code=variant.source, lineage=candidate.lineage,
                          iteration=candidate.iteration, origin="tune",
                          strategy=f"launch configuration: {variant.describe()}",
                          parent_id=candidate.id)
        tuned = TunedVariant(child, variant.describe(), variant_diff(candidate.code, variant.source))
        result.variants.append(tuned)
        return tuned

    @staticmethod
    def _note_left_out(result: TuneResult, search: Search) -> None:
        left = search.legal - search.own_legal - len(result.variants)
        if left > 0:
            result.notes.append(f"left out by the budget: {left} more variants that fit")

    def _search(self, task: Task, candidate: Candidate, search: Search, result: TuneResult,
                judge: Evaluator, budget: TuneBudget) -> None:
        """Judge the coarse variants, then batches of neighbours of the fastest so far, until
        the budget's variants or seconds are spent or nothing is left to try."""
        deadline = time.monotonic() + budget.seconds
        parallel = judge.max_parallel if isinstance(judge, EvaluatorBase) else 1
        points: dict[str, Point] = {}
        seen = {search.own}
        batch = search.coarse_batch(seen, coarse_count(budget.candidates))
        while batch:
            tuned = [self._add(result, candidate, variant) for variant in batch]
            points.update((t.candidate.id, v.point) for t, v in zip(tuned, batch, strict=True))
            if not self._judge(task, tuned, judge, deadline):
                result.notes.append(f"time budget of {budget.seconds:g} s spent")
                return
            left = budget.candidates - len(result.variants)
            if left <= 0:
                return
            centers = self._centers(result, points, search)
            batch = search.refine_batch(seen, centers, min(max(1, parallel), left))

    @staticmethod
    def _judge(task: Task, tuned: list[TunedVariant], judge: Evaluator, deadline: float) -> bool:
        """Judge ``tuned`` in order until the deadline; False if it came first (the variants
        not sent stay unjudged)."""
        by_id = {t.candidate.id: t for t in tuned}
        stopped = False

        def jobs() -> Iterator[EvalJob]:
            nonlocal stopped
            for variant in tuned:
                if time.monotonic() >= deadline:
                    stopped = True
                    return
                yield EvalJob(task, variant.candidate)

        for job, verdict in judge.evaluate_many(jobs()):
            by_id[job.candidate.id].result = verdict
        return not stopped

    @staticmethod
    def _centers(result: TuneResult, points: dict[str, Point], search: Search) -> list[Point]:
        """Where to refine, best first: the timed variants, fastest first; with none timed,
        the correct ones (else all judged) in the model's order; with none, the candidate's own."""
        judged = [v for v in result.variants if v.result is not None]
        timed = sorted((v for v in judged if _speed(v) is not None), key=lambda v: -(_speed(v) or 0.0))
        if timed:
            return [points[v.candidate.id] for v in timed]
        correct = [v for v in judged if v.result is not None and v.result.correct] or judged
        ranked = sorted((points[v.candidate.id] for v in correct), key=lambda p: -search.assessment(p).score)
        return ranked or [search.own]


def _speed(variant: TunedVariant) -> float | None:
    """The variant's measured speedup, if it is correct and was timed."""
    result = variant.result
    if result is None or not result.correct or not result.performance_measured:
        return None
    return result.speedup
