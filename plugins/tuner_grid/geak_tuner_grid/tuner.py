"""The ``grid`` tuner: the nearest variants of a candidate's launch configuration that fit the
device, judged by the run's own judge, the fastest correct one kept."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from geak_core.api.components import EvalJob, TuneBudget, TunedVariant, TunerBase, TuneResult
from geak_core.api.model import Candidate

from geak_tuner_grid.diff import variant_diff
from geak_tuner_grid.variants import Limits, generate_variants

if TYPE_CHECKING:
    from geak_core.api.components import Evaluator, HardwareProfile
    from geak_core.api.tasks import Task


@dataclass
class GridTunerOptions:
    dtype_bytes: int = field(default=2, metadata={"choices": [1, 2, 4]})
    """Element size the cheap model assumes for ``tl.dot`` operands (2: fp16/bf16)."""


class GridTuner(TunerBase):
    """Varies the knobs ``geak_tuner_grid.knobs`` finds, nearest the candidate's own values
    first, within the limits of the run's hardware profile (``Limits()``: an H100's, when
    the run resolved none)."""

    def __init__(self, options: GridTunerOptions | None = None) -> None:
        self.options = options or GridTunerOptions()
        self.profile: HardwareProfile | None = None

    def set_hardware(self, profile: HardwareProfile | None) -> None:
        self.profile = profile

    def tune(self, task: Task, candidate: Candidate, judge: Evaluator | None,
             budget: TuneBudget) -> TuneResult:
        limits = Limits.from_profile(self.profile) if self.profile else Limits()
        generation = generate_variants(candidate.code, limits, budget=budget.candidates,
                                       dtype_bytes=self.options.dtype_bytes)
        result = TuneResult()
        if not self.profile:
            result.notes.append("no hardware profile: an H100's limits assumed")
        if not generation.knobs:
            result.notes.append("no tunable knobs found")
            return result
        for number, variant in enumerate(generation.variants, 1):
            child = Candidate(id=f"{candidate.id}-tune{number}", task_id=candidate.task_id,
                              code=variant.source, lineage=candidate.lineage,
                              iteration=candidate.iteration, origin="tune",
                              strategy=f"launch configuration: {variant.describe()}",
                              parent_id=candidate.id)
            result.variants.append(TunedVariant(child, variant.describe(),
                                                variant_diff(candidate.code, variant.source)))
        if generation.over_budget:
            result.notes.append(f"left out by the budget: {generation.over_budget} more variants that fit")
        if judge is None:
            result.notes.append("no judge: the variants are ranked, not judged")
            return result
        self._judge(task, result, judge, budget)
        return result

    def _judge(self, task: Task, result: TuneResult, judge: Evaluator, budget: TuneBudget) -> None:
        deadline = time.monotonic() + budget.seconds
        by_id = {v.candidate.id: v for v in result.variants}

        def jobs() -> Iterator[EvalJob]:
            for variant in result.variants:
                if time.monotonic() >= deadline:
                    result.notes.append(f"time budget of {budget.seconds:g} s spent")
                    return
                yield EvalJob(task, variant.candidate)

        for job, verdict in judge.evaluate_many(jobs()):
            by_id[job.candidate.id].result = verdict
        timed = [v for v in result.variants if v.result is not None and v.result.correct
                 and v.result.performance_measured and v.result.speedup is not None]
        if any(v.result is not None and v.result.correct for v in result.variants) and not timed:
            result.notes.append("correct variants were not timed (no GPU): no speed to compare")
        result.best = max(timed, key=lambda v: v.result.speedup, default=None)  # type: ignore[union-attr]
