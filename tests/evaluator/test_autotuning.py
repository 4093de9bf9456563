"""Autotuned candidates: each key tuned once per child, time allowed for it, and a timeout
while tuning says so (``geak_evaluator_triton.autotuning``)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ADD_AUTOTUNED = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 32}), triton.Config({"BLOCK_SIZE": 64}),
                          triton.Config({"BLOCK_SIZE": 128})], key=["n_elements"]{prune})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
'''

STUCK_PRUNE = '''
import time


def _stuck(configs, named_args, **kwargs):  # the autotuner's pruning, before any benchmark
    while True:
        time.sleep(0.1)
'''


@pytest.fixture(scope="module")
def autotuned(mini_tasks, tmp_path_factory):
    """An autotuned add, and one whose autotuning never ends, judged side by side; and the
    plain add judged against an autotuned reference."""
    import dataclasses

    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    add = mini_tasks["add"]
    codes = {
        "tuned": ADD_AUTOTUNED.replace("{prune}", ""),
        "stuck": STUCK_PRUNE + ADD_AUTOTUNED.replace("{prune}", ', prune_configs_by={"early_config_prune": _stuck}'),
    }
    jobs = [EvalJob(add, Candidate(id=k, task_id="add", code=v)) for k, v in codes.items()]
    tuned_reference = tmp_path_factory.mktemp("reference") / "add_tuned.py"
    tuned_reference.write_text(codes["tuned"])
    plain = Candidate(id="against_tuned", task_id="add_tuned", code=Path(add.reference).read_text())
    jobs.append(EvalJob(dataclasses.replace(add, id="add_tuned", reference=str(tuned_reference)), plain))
    judge = TritonEvaluator(judge_options(timeout_s=15.0, secret_seeds=0, autotune_allowance_s=1.0))
    try:
        return {job.candidate.id: result for job, result in judge.evaluate_many(jobs)}
    finally:
        judge.close()


def test_an_autotuned_candidate_tunes_each_key_once_across_its_runs(autotuned):
    """Two cases, each run on two seeds in stage 1 (one rerun) and stage 2, in one child: the
    autotuner tunes two keys, once each."""
    result = autotuned["tuned"]
    assert result.correct, result.reason
    assert result.phases["candidate.autotune_keys"] == 2
    assert result.phases["candidate.autotune"] >= 0


def test_an_autotuned_reference_reports_its_keys_too(autotuned):
    result = autotuned["against_tuned"]
    assert result.correct, result.reason
    assert result.phases["reference.autotune_keys"] == 2
    assert "candidate.autotune_keys" not in result.phases


def test_a_candidate_stuck_autotuning_times_out_with_the_kernel_and_key_named(autotuned):
    result = autotuned["stuck"]
    assert not result.call_ok and result.failed_stage == "run"
    assert ("ran out of time while autotuning add_kernel (3 configs, key #1 of 2)" in result.reason), result.reason
    # its deadline: the timeout, and a second for each config at each of its two cases
    assert "+6 s for autotuning: 1 s a config a case, 3 configs of 1 autotuner x 2 cases" in result.reason
    assert "during stage1 case 'n100_float32' seed 0" in result.reason
    assert 21 <= result.phases["candidate"] < 40


def test_the_allowance_is_a_time_a_config_a_case_up_to_a_most():
    from geak_evaluator_triton.autotuning import allowance, read_autotuners

    assert allowance([48, 3], 8, 0.5, 600.0) == 0.5 * 51 * 8
    assert allowance([48, 3], 80, 0.5, 600.0) == 600.0
    assert allowance([48], 8, 0.0, 600.0) == 0.0  # off
    assert allowance([], 8, 1.0, 600.0) == 0.0  # no autotuner: no time beyond the budget
    assert read_autotuners([{"kernel": "k", "configs": 4}, {"kernel": "x", "configs": "many"}, 7]) == [
        {"kernel": "k", "configs": 4}]
