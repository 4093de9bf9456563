"""Every task's reference, judged by the evaluator as a candidate (child processes, both
stages, determinism rerun, contract and anti-cheat checks), is correct on the small cases.

test_references.py checks the references against the oracles in this process; this is the
same verdict the agent and `geak-core eval` get, under the Triton interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core.api.components import EvalJob
from geak_core.api.model import Candidate
from geak_core.api.tasks import DeviceInfo, unmet_requirement
from geak_suite_rocm.suite import RocmSuite

pytestmark = pytest.mark.slow

TASKS = RocmSuite().tasks()
DEVICE = DeviceInfo.detect()


@pytest.fixture(scope="module")
def verdicts():
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    evaluator = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", workers=2, timeout_s=300.0))
    try:
        jobs = [
            EvalJob(task, Candidate(id=f"reference:{task.id}", task_id=task.id,
                                    code=Path(task.reference).read_text(encoding="utf-8")))
            for task in TASKS
        ]
        return {job.task.id: result for job, result in evaluator.evaluate_many(jobs)}
    finally:
        evaluator.close()


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_the_reference_judged_as_a_candidate_is_correct(verdicts, task):
    unmet = [why for r in task.requires if (why := unmet_requirement(r, DEVICE))]
    if unmet:
        pytest.skip("; ".join(unmet))
    result = verdicts[task.id]
    assert result.call_ok and result.correct, result.reason
    assert result.failed_stage is None
    assert result.flags == []
    assert result.performance_measured is False  # the interpreter times nothing
    assert all(skip.get("reason") for skip in result.skipped), result.skipped
