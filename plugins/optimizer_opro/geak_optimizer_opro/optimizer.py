"""The ``opro`` optimizer: per-task archives of the best correct candidates.

``record`` sees every judged candidate, ``record_profile`` what a profiler found of one
(its bottleneck goes beside its entry); ``context`` hands the ``optimize``
template the archive in ascending order (see ``archive.py`` for the rules),
the best measured speedup, whether anything was measured at all, the
``explore`` switch ("propose a strategy different from all of these" rather
than "beat the fastest") and how many proposals one step asks for.

``proposals`` is read by the agent: each optimisation step asks the LLM for that
many completions of the ``optimize`` prompt (``n``) and judges all of them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from geak_core.api.components import OptimizerBase
from geak_core.api.errors import InputError
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import ProfileRecord, bound_line

from geak_optimizer_opro.archive import Archive


@dataclass
class OproOptions:
    """Recipe keys of ``[optimizer]`` when ``name = "opro"``."""

    archive_size: int = 8
    proposals: int = 1
    explore: bool = False
    min_speedup_delta: float = 0.0

    def __post_init__(self) -> None:  # runs when the recipe is validated, before any work
        if self.archive_size < 1:
            raise InputError(f"optimizer.archive_size must be at least 1, got {self.archive_size}")
        if self.proposals < 1:
            raise InputError(
                f"optimizer.proposals must be at least 1, got {self.proposals} "
                '(optimizer = "none" turns optimisation off)'
            )
        if self.min_speedup_delta < 0:
            raise InputError(
                f"optimizer.min_speedup_delta must not be negative, got {self.min_speedup_delta}"
            )


class OproOptimizer(OptimizerBase):
    def __init__(self, options: OproOptions | None = None):
        self.options = options or OproOptions()
        self.proposals = self.options.proposals
        self._archives: dict[str, Archive] = {}
        self._lock = threading.Lock()  # lineages record from several threads

    def _archive(self, task_id: str) -> Archive:
        if task_id not in self._archives:
            self._archives[task_id] = Archive(
                self.options.archive_size, self.options.min_speedup_delta
            )
        return self._archives[task_id]

    def record(self, task_id: str, candidate: Candidate, result: EvalResult) -> None:
        with self._lock:
            self._archive(task_id).offer(candidate, result)

    def record_profile(self, task_id: str, record: ProfileRecord) -> None:
        if record.diagnosis is None:
            return
        with self._lock:
            self._archive(task_id).profiled(record.candidate_id, bound_line(record.diagnosis))

    def context(self, task_id: str) -> dict[str, Any]:
        with self._lock:
            context = self._archive(task_id).as_context()
        context["explore"] = self.options.explore
        context["proposals"] = self.proposals
        return context
