"""KernelBench's fast_p (geak_core.api.scaling.fast_p): the share of tasks whose best candidate
is correct and more than p times faster than PyTorch eager, and why a correct task had no
speedup against eager (eager_gap)."""

from __future__ import annotations

from geak_core.api.model import EvalResult
from geak_core.api.scaling import (
    EAGER_NOT_TIMED,
    FAST_P_THRESHOLDS,
    NO_EAGER_EQUIVALENT,
    NO_EAGER_SPEEDUP,
    NOT_TIMED,
    NOT_TIMED_INTERPRETER,
    FastTask,
    eager_gap,
    fast_p,
    fast_p_key,
)


def test_the_thresholds_are_kernelbenchs_0_1_and_2_named_fast_0_fast_1_fast_2():
    assert FAST_P_THRESHOLDS == (0.0, 1.0, 2.0)
    assert [fast_p_key(p) for p in FAST_P_THRESHOLDS] == ["fast_0", "fast_1", "fast_2"]
    assert fast_p_key(1.5) == "fast_1.5"


def test_a_task_counts_when_correct_and_strictly_faster_than_p_times_eager():
    tasks = [FastTask(True, 0.5), FastTask(True, 1.0), FastTask(True, 2.5), FastTask(False), FastTask(False)]
    found = fast_p(tasks)
    assert [(found[k]["n"], found[k]["m"]) for k in ("fast_0", "fast_1", "fast_2")] == [(3, 5), (1, 5), (1, 5)]
    assert found["fast_0"]["fraction"] == 3 / 5
    assert found["fast_1"]["fraction"] == 1 / 5  # exactly 1.0x is not faster than eager
    assert found["fast_2"]["p"] == 2.0
    assert all(entry["unmeasured"] == 0 and entry["unmeasured_reasons"] == {} for entry in found.values())


def test_a_wrong_task_with_an_eager_figure_is_not_fast():
    assert fast_p([FastTask(False, 9.0)])["fast_0"]["n"] == 0


def test_correct_tasks_without_an_eager_speedup_count_as_not_fast_and_are_told_apart():
    tasks = [FastTask(True, None, NOT_TIMED_INTERPRETER), FastTask(True, None, NOT_TIMED_INTERPRETER),
             FastTask(True, None, NO_EAGER_EQUIVALENT), FastTask(True, None), FastTask(True, 3.0)]
    entry = fast_p(tasks)["fast_0"]
    assert (entry["n"], entry["m"], entry["unmeasured"]) == (1, 5, 4)
    assert entry["unmeasured_reasons"] == {NOT_TIMED_INTERPRETER: 2, NO_EAGER_EQUIVALENT: 1, NO_EAGER_SPEEDUP: 1}


def test_more_thresholds_give_more_figures():
    found = fast_p([FastTask(True, 1.4)], thresholds=(0.0, 1.2, 1.5))
    assert {k: v["n"] for k, v in found.items()} == {"fast_0": 1, "fast_1.2": 1, "fast_1.5": 0}


def test_no_tasks_have_no_fraction():
    assert fast_p([])["fast_0"] == {"p": 0.0, "n": 0, "m": 0, "fraction": None, "unmeasured": 0,
                                    "unmeasured_reasons": {}}


def _correct(**kwargs) -> EvalResult:
    return EvalResult("t", "t/c", call_ok=True, correct=True, **kwargs)


def test_eager_gap_is_none_for_a_verdict_with_an_eager_speedup_or_not_correct():
    assert eager_gap(_correct(speedup_vs_eager=1.2, performance_measured=True), True) is None
    assert eager_gap(EvalResult("t", "t/c", call_ok=True), True) is None
    assert eager_gap(None, True) is None


def test_eager_gap_names_the_cpu_interpreter_for_a_verdict_it_judged():
    assert eager_gap(_correct(mode="interpreter"), True) == NOT_TIMED_INTERPRETER
    assert eager_gap(_correct(mode="gpu"), True) == NOT_TIMED


def test_eager_gap_names_a_task_without_an_eager_equivalent_first():
    assert eager_gap(_correct(mode="interpreter"), False) == NO_EAGER_EQUIVALENT
    assert eager_gap(_correct(mode="gpu", performance_measured=True), False) == NO_EAGER_EQUIVALENT


def test_eager_gap_of_a_timed_verdict_whose_eager_run_was_not_timed():
    assert eager_gap(_correct(mode="gpu", performance_measured=True), True) == EAGER_NOT_TIMED
    assert eager_gap(_correct(mode="gpu", performance_measured=True), None) == NO_EAGER_SPEEDUP
