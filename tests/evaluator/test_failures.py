"""Crashes, hangs and judge-side problems become clear EvalResults, never exceptions."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

SEGFAULT_IN_RUN = '''
import faulthandler

import triton
import triton.language as tl


def _crash(args):
    faulthandler._sigsegv()


@triton.heuristics({"UNUSED": _crash})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, UNUSED: tl.constexpr):
    pass
'''

HANG_AT_IMPORT = '''
import triton
import triton.language as tl

while True:
    pass


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass
'''


@pytest.fixture(scope="module")
def short_judge():
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    evaluator = TritonEvaluator(judge_options(timeout_s=12.0, secret_seeds=0))
    yield evaluator
    evaluator.close()


@pytest.fixture(scope="module")
def failures(short_judge, mini_tasks):
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    codes = {"segfault": SEGFAULT_IN_RUN, "hang": HANG_AT_IMPORT}
    jobs = [EvalJob(mini_tasks["add"], Candidate(id=k, task_id="add", code=v)) for k, v in codes.items()]
    return {job.candidate.id: result for job, result in short_judge.evaluate_many(jobs)}


def test_a_segfault_while_running_is_reported_with_its_signal_and_location(failures):
    result = failures["segfault"]
    assert not result.call_ok
    assert result.failed_stage == "run"
    assert "crashed with SIGSEGV" in result.reason
    assert "stage1 case 'n100_float32' seed 0" in result.reason
    assert "Fatal Python error" in (result.error or "")


def test_a_hang_is_killed_at_the_timeout_and_reported(failures):
    result = failures["hang"]
    assert not result.call_ok
    assert result.failed_stage == "import"
    assert "timed out after" in result.reason
    assert result.wall_s < 40


def test_a_candidate_budget_scales_from_the_reference_between_a_floor_and_the_timeout():
    from geak_evaluator_triton.reference_run import TIMED_CASE_S, ReferenceRun, candidate_budget

    ref = ReferenceRun([], [], [], False, [0], {}, own_s=3.0)
    assert candidate_budget(ref, 600.0, 20.0, 120.0)[0] == 120.0  # the floor: compiling
    ref.own_s = 12.0
    budget, note = candidate_budget(ref, 600.0, 20.0, 120.0)
    assert budget == 240.0 and "20 x the reference's 12.0 s" in note and "at most 600 s" in note
    ref.own_s = 100.0
    assert candidate_budget(ref, 600.0, 20.0, 120.0)[0] == 600.0  # the ceiling
    assert candidate_budget(ref, 600.0, 0.0, 120.0) == (600.0, "")  # off: the timeout, flat
    ref.own_s = 0.0
    assert candidate_budget(ref, 600.0, 20.0, 120.0) == (600.0, "")  # unknown: the timeout
    assert TIMED_CASE_S > 0


def test_a_candidate_that_hangs_while_running_is_stopped_at_its_budget_not_the_timeout(mini_tasks):
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import ADD_HANGS_IN_LAUNCH, judge_options

    judge = TritonEvaluator(judge_options(timeout_s=120.0, budget_floor_s=4.0, budget_scale=1.0, secret_seeds=0))
    try:
        reference = judge.reference(mini_tasks["add"])  # the reference first: its time is known
        result = judge.evaluate(mini_tasks["add"], Candidate(id="hang", task_id="add", code=ADD_HANGS_IN_LAUNCH))
    finally:
        judge.close()
    assert reference.own_s > 0
    assert not result.call_ok and "timed out after" in result.reason, result.reason
    assert "its budget: 1 x the reference's" in result.reason and "at least 4 s" in result.reason
    assert result.wall_s < 60  # not the 120 s timeout


def test_a_failing_reference_is_a_judge_error_not_a_verdict_on_the_candidate(mini_tasks, tmp_path):
    import dataclasses

    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    broken = tmp_path / "broken_reference.py"
    broken.write_text("raise ImportError('reference is broken')\n")
    task = dataclasses.replace(mini_tasks["add"], reference=str(broken))
    evaluator = TritonEvaluator(judge_options(workers=1, secret_seeds=0))
    try:
        result = evaluator.evaluate(task, Candidate(id="c", task_id="add",
                                                    code=open(mini_tasks["add"].reference).read()))
    finally:
        evaluator.close()
    assert "judge_error" in result.flags and "reference_failed" in result.flags
    assert result.failed_stage is None
    assert "reference" in result.reason and "reference is broken" in result.error


def test_an_unknown_harness_is_a_judge_error(mini_tasks):
    import dataclasses

    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    task = dataclasses.replace(mini_tasks["add"], harness="minisuite.harnesses:NoSuchHarness")
    evaluator = TritonEvaluator(judge_options(workers=1, secret_seeds=0))
    try:
        result = evaluator.evaluate(task, Candidate(id="c", task_id="add", code="x = 1\n"))
        assert result.failed_stage == "contract"  # static check first: no kernel in the code
        result = evaluator.evaluate(task, Candidate(id="c", task_id="add",
                                                    code=open(mini_tasks["add"].reference).read()))
    finally:
        evaluator.close()
    assert "judge_error" in result.flags  # the reference child cannot load it: the task fails, not the candidate
    assert "NoSuchHarness" in result.reason or "NoSuchHarness" in (result.error or "")


def test_reference_outputs_on_disk_spare_a_later_session_the_reference_run(mini_tasks, tmp_path):
    import torch
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    task = mini_tasks["add"]
    first = TritonEvaluator(judge_options(workers=1, secret_seeds=0, reference_cache_dir=str(tmp_path)))
    computed = first.reference(task)
    first.close()
    assert computed.wall_s > 0
    assert sorted(p.name.split("-")[1] for p in tmp_path.iterdir()) == ["0.gkt", "1.gkt"]
    second = TritonEvaluator(judge_options(workers=1, secret_seeds=0, reference_cache_dir=str(tmp_path)))
    loaded = second.reference(task)
    second.close()
    assert loaded.wall_s == 0.0
    assert loaded.outputs.keys() == computed.outputs.keys()
    for key, value in computed.outputs.items():
        assert torch.equal(loaded.outputs[key]["out"], value["out"])
