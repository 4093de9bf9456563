"""What a run shows while it works: one line per judged candidate, a status line on a terminal.

The agent drives a ``Progress`` through four events, always in this order per
task, from several lineage threads at once (every method is thread-safe):

* ``candidate_judged(event)``: a candidate has its verdict (``CandidateJudged``:
  task, lineage, iteration, proposal index, round kind, the verdict);
* ``task_finished(summary)``: every lineage of a task has stopped
  (``TaskSummary``);
* ``line(text)``: any other message for the log;
* ``close()``: the run is over (also after an interruption); clears the
  status line.

Lines go to ``echo`` (plain text, one per event, suitable for logs and
pipes); on a terminal a status line (tasks done, correct, best speedup) is
redrawn on stderr under them.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from geak_core.model import EvalResult, TaskSummary

Echo = Callable[[str], None]


@dataclass(frozen=True)
class CandidateJudged:
    """One verdict of one round (``proposal`` is the completion's index when a round asked
    for several, else None)."""

    task_id: str
    lineage: int
    iteration: int
    kind: str  # generate | reflect | optimize | restart
    result: EvalResult
    proposal: int | None = None

    def describe(self) -> str:
        result = self.result
        verdict = "correct" if result.correct else f"{result.failed_stage}: {(result.reason or '')[:80]}"
        speed = f" speedup {result.speedup:.2f}x" if result.speedup else ""
        proposal = f" P{self.proposal}" if self.proposal is not None else ""
        return f"[{self.task_id}] L{self.lineage} I{self.iteration}{proposal} {self.kind:<8} -> {verdict}{speed}"


class Progress:
    """Plain lines for logs; a live status line on a terminal."""

    def __init__(self, echo: Echo, total_tasks: int):
        self.echo = echo
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.total = total_tasks
        self.done = 0
        self.correct = 0
        self.best: float | None = None

    def line(self, text: str) -> None:
        with self.lock:
            if self.tty:
                sys.stderr.write("\r\033[K")
            self.echo(text)
            if self.tty:
                best = f"{self.best:.2f}x" if self.best else "-"
                sys.stderr.write(f"tasks {self.done}/{self.total}  correct {self.correct}  best {best}")
                sys.stderr.flush()

    def candidate_judged(self, event: CandidateJudged) -> None:
        self.line(event.describe())

    def task_finished(self, summary: TaskSummary) -> None:
        with self.lock:
            self.done += 1
            self.correct += int(summary.correct)
            if summary.best_speedup and (self.best is None or summary.best_speedup > self.best):
                self.best = summary.best_speedup

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


__all__ = ["CandidateJudged", "Echo", "Progress"]
