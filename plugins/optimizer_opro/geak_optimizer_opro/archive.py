"""The OPRO archive: the best correct versions of one task, kept for optimisation prompts.

OPRO ("optimisation by prompting") shows the model its previous solutions
sorted from worst to best, so the prompt ends on the strongest one and the
model is asked to beat it. The archive holds at most ``size`` entries.

Rules (the prompt must never show a number that was not measured):

* Only correct candidates enter. Code already seen for the task (same
  content hash), even if it was evicted since, never enters again.
* A candidate with a measured speedup (a GPU timing) ranks by that speedup.
  One without (the CPU interpreter only checks correctness) keeps
  ``speedup = None`` and ranks below every measured entry, by arrival.
* Display order is ascending: unmeasured entries first, oldest first; then
  measured ones by speedup; equal speedups keep arrival order (the earlier
  first).
* When the archive is full, a newcomer must beat the worst entry, which it
  replaces. The worst is the oldest unmeasured entry if there is one (on a
  CPU-only run the archive therefore holds the most recent versions);
  otherwise the lowest speedup, and among equal speedups the later arrival
  (the incumbent stays). A measured newcomer beats an unmeasured entry
  always, and a measured one when faster by more than ``min_delta``; an
  unmeasured newcomer only replaces an unmeasured entry.
* A profiled entry carries its bottleneck (``bottleneck``: "memory-bound at 82 % of
  peak"), shown beside its speedup; profiles never change the order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import ArchiveEntry
from geak_core.api.model import Candidate, EvalResult

LATENCY_KEYS = (
    "case",
    "dtype",
    "reference_ms",
    "candidate_ms",
    "speedup",
    "roofline_fraction",
    "bound",
)


@dataclass
class OproEntry(ArchiveEntry):
    """An ``ArchiveEntry`` plus what the archive needs to order and deduplicate it."""

    speedup: float | None = None  # type: ignore[assignment]  # None: not measured
    code_hash: str = ""
    arrival: int = 0

    @property
    def measured(self) -> bool:
        return self.speedup is not None


def measured_speedup(result: EvalResult) -> float | None:
    """The result's speedup if it was really timed, else None."""
    speedup = result.speedup
    if not result.performance_measured or speedup is None:
        return None
    if not math.isfinite(speedup) or speedup <= 0:
        return None
    return float(speedup)


def entry_for(candidate: Candidate, result: EvalResult, arrival: int) -> OproEntry:
    latencies = [{k: v for k, v in s.to_dict().items() if k in LATENCY_KEYS} for s in result.shapes]
    for row, shape in zip(latencies, result.shapes, strict=True):
        if shape.flags:  # a case flagged above the peak: its speedup counts in none of the entry's
            row["flags"] = list(shape.flags)
    return OproEntry(
        candidate_id=candidate.id,
        code=candidate.code,
        speedup=measured_speedup(result),
        strategy=candidate.strategy,
        latencies=latencies,
        roofline_fraction=result.roofline_fraction,
        code_hash=candidate.hash,
        arrival=arrival,
    )


def _display_key(e: OproEntry) -> tuple[int, float, int]:
    return (1, e.speedup, e.arrival) if e.speedup is not None else (0, 0.0, e.arrival)


def _worst_key(e: OproEntry) -> tuple[int, float, int]:
    return (1, e.speedup, -e.arrival) if e.speedup is not None else (0, 0.0, e.arrival)


@dataclass
class Archive:
    size: int
    min_delta: float = 0.0
    entries: list[OproEntry] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    arrivals: int = 0

    def worst(self) -> OproEntry | None:
        return min(self.entries, key=_worst_key) if self.entries else None

    def beats(self, new: OproEntry, old: OproEntry) -> bool:
        if new.speedup is None:
            return old.speedup is None
        if old.speedup is None:
            return True
        return new.speedup > old.speedup + self.min_delta

    def offer(self, candidate: Candidate, result: EvalResult) -> bool:
        """Consider one judged candidate; True if it entered the archive."""
        if not result.correct or candidate.hash in self.seen:
            return False
        self.seen.add(candidate.hash)
        self.arrivals += 1
        new = entry_for(candidate, result, self.arrivals)
        if len(self.entries) < self.size:
            self.entries.append(new)
            return True
        worst = self.worst()
        assert worst is not None
        if not self.beats(new, worst):
            return False
        self.entries.remove(worst)
        self.entries.append(new)
        return True

    def profiled(self, candidate_id: str, bottleneck: str) -> None:
        """Note the bottleneck of the entry of ``candidate_id`` (none: it is not in the archive)."""
        for entry in self.entries:
            if entry.candidate_id == candidate_id:
                entry.bottleneck = bottleneck

    def ascending(self) -> list[OproEntry]:
        return sorted(self.entries, key=_display_key)

    def best_speedup(self) -> float | None:
        measured = [e.speedup for e in self.entries if e.speedup is not None]
        return max(measured) if measured else None

    def as_context(self) -> dict[str, Any]:
        return {
            "archive": self.ascending(),
            "best_speedup": self.best_speedup(),
            "speedup_measured": any(e.measured for e in self.entries),
        }
