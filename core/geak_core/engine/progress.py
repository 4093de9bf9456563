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
pipes). On a terminal a status line is redrawn on stderr under them, once a
second and after every event: tasks done and correct, lineages at work,
candidates judged and correct, the best speedup, tokens and cost so far,
elapsed time and an estimate of the time left. When stderr is not a terminal
the same figures are written as a plain ``progress:`` line through ``echo``
each time a task finishes.

The estimate counts rounds: a task's lineages each run at most ``iterations``
rounds, so the work left is what its unfinished tasks may still ask for (an
upper bound: lineages stop early at their target); the rate is rounds judged
per second so far. Without ``lineages`` and ``iterations`` it counts tasks.

``StatusLine`` is the terminal half on its own; ``geak-core eval`` uses it too.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from geak_core.api.model import EvalResult, TaskSummary

Echo = Callable[[str], None]


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, an ellipsis where it was cut."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "\u2026"


def clip_left(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, keeping its end (a path's file name), an
    ellipsis where its start was cut."""
    return text if len(text) <= width else "\u2026" + text[len(text) - max(0, width - 1):]


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
        verdict = "correct" if result.correct else f"{result.failed_stage}: {clip(result.reason or '', 80)}"
        speed = f" speedup {result.speedup:.2f}x" if result.speedup else ""
        proposal = f" P{self.proposal}" if self.proposal is not None else ""
        return f"[{self.task_id}] L{self.lineage} I{self.iteration}{proposal} {self.kind:<8} -> {verdict}{speed}"


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 10_000:
        return f"{tokens / 1000:.0f}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k"
    return str(tokens)


class StatusLine:
    """One line of status, redrawn in place on a terminal stream.

    ``text()`` is asked for the line at each redraw; a daemon thread redraws it every
    ``refresh_s`` seconds so the clock moves while nothing else does. ``clear()`` wipes
    it before other output is written, ``draw()`` puts it back. Lines longer than the
    terminal are cut, since a wrapped line cannot be redrawn in place.
    """

    def __init__(self, text: Callable[[], str], stream: TextIO | None = None, refresh_s: float = 1.0):
        self.text = text
        self.stream = stream if stream is not None else sys.stderr
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh_s = refresh_s

    def start(self) -> None:
        if self._thread is None and self.refresh_s > 0:
            self._thread = threading.Thread(target=self._tick, name="geak-status", daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.refresh_s):
            self.draw()

    def clear(self) -> None:
        with self.lock:
            self.stream.write("\r\033[K")

    def draw(self) -> None:
        text = self.text()  # before taking the lock: text() may take its owner's lock
        width = shutil.get_terminal_size((100, 24)).columns - 1
        with self.lock:
            if self._stop.is_set():
                return
            self.stream.write("\r\033[K" + text[:max(20, width)])
            self.stream.flush()

    def stop(self) -> None:
        with self.lock:
            self._stop.set()
            self.stream.write("\r\033[K")
            self.stream.flush()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.refresh_s)


class Progress:
    """Plain lines for logs; a live status line on a terminal.

    ``lineages`` and ``iterations`` (per task) make the estimate count rounds, and
    ``usage`` (a callable giving ``prompt_tokens``, ``completion_tokens`` and
    ``cost_usd`` so far, as ``RunStore.usage`` does) adds tokens and cost; each is
    left out of the display when not given. ``tty`` defaults to whether stderr is
    a terminal; ``stream`` (default stderr) takes the status line.
    """

    def __init__(self, echo: Echo, total_tasks: int, *, lineages: int | None = None,
                 iterations: int | None = None, usage: Callable[[], Mapping[str, Any]] | None = None,
                 tty: bool | None = None, stream: TextIO | None = None, refresh_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self.echo = echo
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.lock = threading.RLock()
        self.total = total_tasks
        self.lineages = lineages
        self.iterations = iterations
        self.usage = usage
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.correct = 0
        self.best: float | None = None
        self.judged = 0
        self.judged_correct = 0
        self.rounds: dict[str, set[tuple[int, int]]] = {}
        self.finished: set[str] = set()
        self.status = StatusLine(self.status_text, stream, refresh_s) if self.tty else None
        if self.status is not None:
            self.status.start()

    # -- figures -------------------------------------------------------------

    def _rounds_done(self) -> int:
        return sum(len(r) for r in self.rounds.values())

    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None before there is a rate."""
        elapsed = self.clock() - self.started
        if self.lineages and self.iterations:
            done = self._rounds_done()
            per_task = self.lineages * self.iterations
            unfinished = self.total - len(self.finished)
            started = [t for t in self.rounds if t not in self.finished]
            left = unfinished * per_task - sum(len(self.rounds[t]) for t in started)
            return elapsed / done * max(0, left) if done else None
        return elapsed / self.done * (self.total - self.done) if self.done else None

    def status_text(self) -> str:
        with self.lock:
            parts = [f"tasks {self.done}/{self.total} ({self.correct} correct)"]
            if self.lineages:
                active = sum(len({lineage for lineage, _ in r}) for t, r in self.rounds.items()
                             if t not in self.finished)
                parts.append(f"lineages {active} at work of {self.total * self.lineages}")
            parts.append(f"candidates {self.judged} judged ({self.judged_correct} correct)")
            parts.append(f"best {self.best:.2f}x" if self.best else "best -")
            if self.usage is not None:
                try:
                    usage = self.usage()
                except Exception:  # a busy store must not stop the run; skip the figure
                    usage = None
                if usage is not None:
                    tokens = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
                    cost = usage.get("cost_usd")
                    parts.append(f"tokens {format_tokens(tokens)}" + (f" ${cost:.4f}" if cost else ""))
            elapsed = self.clock() - self.started
            eta = self.eta_s()
            parts.append(format_duration(elapsed) + (f", ETA {format_duration(eta)}" if eta is not None
                                                     else ", ETA -"))
            return "  ".join(parts)

    # -- events --------------------------------------------------------------

    def line(self, text: str) -> None:
        with self.lock:
            if self.status is not None:
                self.status.clear()
            self.echo(text)
            if self.status is not None:
                self.status.draw()

    def candidate_judged(self, event: CandidateJudged) -> None:
        with self.lock:
            self.judged += 1
            result = event.result
            if result.correct:
                self.judged_correct += 1
                if result.speedup and (self.best is None or result.speedup > self.best):
                    self.best = result.speedup
            self.rounds.setdefault(event.task_id, set()).add((event.lineage, event.iteration))
            self.line(event.describe())

    def task_finished(self, summary: TaskSummary) -> None:
        with self.lock:
            self.done += 1
            self.correct += int(summary.correct)
            self.finished.add(summary.task_id)
            if summary.best_speedup and (self.best is None or summary.best_speedup > self.best):
                self.best = summary.best_speedup
            if self.status is not None:
                self.status.draw()
            else:
                self.echo("progress: " + self.status_text())

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


__all__ = ["CandidateJudged", "Echo", "Progress", "StatusLine", "format_duration", "format_tokens"]
