"""Honest candidates: accepted when right, rejected with a located reason when wrong or broken."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

TASKS = ("add", "rowsum", "perm", "scale", "stats")


@pytest.mark.parametrize("task_id", TASKS)
def test_the_reference_judged_as_a_candidate_is_correct(verdicts, task_id):
    result = verdicts[f"reference:{task_id}"]
    assert result.call_ok, result.reason
    assert result.correct, result.reason
    assert result.failed_stage is None
    assert result.flags == (["weak_test"] if task_id == "perm" else [])


def test_interpreter_mode_reports_no_performance_figures(verdicts):
    result = verdicts["reference:add"]
    assert result.mode == "interpreter"
    assert result.performance_measured is False
    assert "interpreter" in result.performance_note
    assert result.speedup is None and result.speedup_sum is None and result.speedup_geomean is None
    assert [s.case for s in result.shapes] == ["n100_float32", "n64_float16"]
    assert all(s.candidate_ms is None for s in result.shapes)


def test_a_harness_compare_hook_can_accept_what_the_default_would_reject(verdicts):
    result = verdicts["inline:perm_in_order"]
    assert result.correct, result.reason


def test_a_harness_compare_hook_reports_its_own_reason(verdicts):
    result = verdicts["inline:perm_zeros"]
    assert not result.correct
    assert result.failed_stage == "stage1"
    assert "not a permutation" in result.reason


def test_an_autograd_alias_is_accepted_as_the_candidates_own_entry_point(verdicts):
    result = verdicts["inline:scale_autograd_alias"]
    assert result.correct, result.reason


def test_a_task_whose_harness_calls_its_check_weak_flags_every_verdict(verdicts):
    assert "weak_test" in verdicts["reference:perm"].flags
    assert "weak_test" in verdicts["inline:perm_zeros"].flags
    assert "weak_test" not in verdicts["reference:add"].flags


def test_stage_two_skips_are_reported_with_their_reason(verdicts):
    result = verdicts["reference:perm"]
    assert {"case": "n50", "stage": "stage2",
            "reason": "a permutation does not depend on magnitudes"} in result.skipped


def test_nested_outputs_are_compared_structurally(verdicts):
    result = verdicts["inline:stats_missing_key"]
    assert not result.correct
    assert result.failed_stage == "stage1"
    assert "['extremes']: expected 2 items, got 1" in result.reason


def test_an_exception_in_the_kernel_fails_the_run_stage_with_the_traceback(verdicts):
    result = verdicts["inline:add_raises"]
    assert not result.call_ok
    assert result.failed_stage == "run"
    assert "stage1 case 'n100_float32'" in result.reason
    assert "undefined_name" in result.error
    assert "candidate.py" in result.error


def test_an_import_error_fails_the_import_stage(verdicts):
    result = verdicts["inline:add_import_fails"]
    assert not result.call_ok
    assert result.failed_stage == "import"
    assert "ValueError: broken on purpose" in result.reason


def test_a_syntax_error_is_located_without_running_anything(verdicts):
    result = verdicts["inline:add_syntax_error"]
    assert result.failed_stage == "import"
    assert "syntax error at line 4" in result.reason
    assert result.wall_s < 5


def test_a_kernel_without_the_required_parameters_breaks_the_contract(verdicts):
    result = verdicts["inline:add_wrong_signature"]
    assert result.failed_stage == "contract"
    assert "lacks parameter(s) x_ptr, y_ptr" in result.reason


def test_a_mismatch_reports_indices_and_values(verdicts):
    result = verdicts["cheat:add_unwritten"]
    first = result.mismatches[0]
    assert first["path"] == "out"
    assert first["count"] == first["total"] == 100
    assert first["first"][0]["index"] == [0]
    assert first["first"][0]["actual"] == "nan"
    assert first["stage"] == "stage1" and first["case"] == "n100_float32" and first["seed"] == 0


def test_check_reference_compares_the_reference_with_the_harness_oracle(judge, mini_tasks):
    report = judge.check_reference(mini_tasks["rowsum"])
    assert report["problems"] == []
    assert report["checked"] == 2 * len(judge.seeds_for(mini_tasks["rowsum"]))
