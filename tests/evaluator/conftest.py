"""Shared fixtures: one judge per session and verdicts computed once, in parallel.

Every candidate child costs a Python start-up with torch and triton, so the verdicts
several tests look at are computed once by ``verdicts``.
"""

from __future__ import annotations

import pytest
from judge_support import batch_candidates, judge_options


@pytest.fixture(scope="session")
def mini_tasks():
    import minisuite

    return {t.id: t for t in minisuite.build_tasks()}


@pytest.fixture(scope="session")
def judge():
    from geak_evaluator_triton.evaluator import TritonEvaluator

    evaluator = TritonEvaluator(judge_options())
    yield evaluator
    evaluator.close()


@pytest.fixture(scope="session")
def verdicts(judge, mini_tasks):
    """EvalResult per candidate id, judged in one parallel batch."""
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    jobs = [
        EvalJob(mini_tasks[task_id], Candidate(id=cid, task_id=task_id, code=code))
        for cid, task_id, code in batch_candidates(mini_tasks)
    ]
    return {job.candidate.id: result for job, result in judge.evaluate_many(jobs)}
