"""Large cases are checked on one seed per stage, so a judgement stays fast on big shapes."""

from __future__ import annotations

from geak_evaluator_triton.reference_run import case_seeds
from judge_support import judge_options


def test_ordinary_cases_use_every_seed_and_heavy_cases_one_per_stage():
    seeds = [0, 1, 2, 987654]
    assert case_seeds(1000.0, "stage1", seeds, 64 * 2**20) == seeds
    assert case_seeds(None, "stage2", seeds, 64 * 2**20) == seeds
    assert case_seeds(2.0**30, "stage1", seeds, 64 * 2**20) == [987654]  # the secret seed
    assert case_seeds(2.0**30, "stage2", seeds, 64 * 2**20) == [0]
    assert case_seeds(2.0**30, "stage1", seeds, 0) == seeds  # 0 disables the rule


def test_a_judge_that_treats_every_case_as_heavy_still_judges_correctly(mini_tasks):
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator

    task = mini_tasks["add"]
    code = open(task.reference).read()
    evaluator = TritonEvaluator(judge_options(heavy_case_mb=1e-9))
    try:
        result = evaluator.evaluate(task, Candidate(id="ref", task_id=task.id, code=code))
        wrong = evaluator.evaluate(
            task, Candidate(id="wrong", task_id=task.id, code=code.replace("x + y", "x - y"))
        )
    finally:
        evaluator.close()
    assert result.correct, result.reason
    assert not wrong.correct and wrong.failed_stage == "stage1"
