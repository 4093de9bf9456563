"""judge_jobs starts the next job when one finishes, whatever its caller is doing."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from geak_core.api.components import EvalJob


def _job(task: str, name: str) -> EvalJob:
    return EvalJob(SimpleNamespace(key=task), SimpleNamespace(id=name))


def test_a_slot_freed_while_the_caller_handles_a_verdict_starts_the_next_job_at_once():
    """A caller slow with each verdict (rewriting a journal, printing) must not hold slots idle:
    the jobs after the first finish start while the caller still holds the first verdict."""
    from geak_evaluator_triton.evaluator import judge_jobs

    started: dict[str, float] = {}
    lock = threading.Lock()

    def evaluate(task, candidate):
        with lock:
            started[candidate.id] = time.monotonic()
        time.sleep(0.05)
        return candidate.id

    jobs = [_job(f"t{i}", f"c{i}") for i in range(6)]
    results = judge_jobs(evaluate, jobs, 2)
    _, first = next(results)
    time.sleep(1.0)  # the caller is busy with the first verdict
    with lock:
        assert len(started) == 6  # every job started meanwhile (they take 50 ms, two at a time)
    rest = [result for _, result in results]
    assert sorted([first, *rest]) == [f"c{i}" for i in range(6)]


def test_an_error_of_the_scheduling_itself_reaches_the_caller():
    """``may_start`` and ``ready`` are asked from a finishing job's thread; what they raise is
    raised to the caller, not lost in that thread."""
    from geak_evaluator_triton.evaluator import judge_jobs

    asked = iter([True, True])

    def may_start():
        try:
            return next(asked)
        except StopIteration:
            raise RuntimeError("deadline clock broke") from None

    jobs = [_job(f"t{i}", f"c{i}") for i in range(4)]
    with pytest.raises(RuntimeError, match="deadline clock broke"):
        for _ in judge_jobs(lambda task, candidate: time.sleep(0.02), jobs, 2, may_start=may_start):
            pass


def test_a_caller_that_stops_early_starts_nothing_more():
    from geak_evaluator_triton.evaluator import judge_jobs

    started: list[str] = []

    def evaluate(task, candidate):
        started.append(candidate.id)
        time.sleep(0.05)
        return candidate.id

    results = judge_jobs(evaluate, [_job(f"t{i}", f"c{i}") for i in range(8)], 2)
    next(results)
    results.close()  # the caller's loop broke out
    count = len(started)
    time.sleep(0.3)
    assert len(started) == count <= 4
