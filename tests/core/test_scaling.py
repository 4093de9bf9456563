"""Scaling curves and speedup aggregates (geak_core.api.scaling): pure functions, exact values."""

from __future__ import annotations

import math

import pytest
from geak_core.api.model import Candidate, EvalResult, ShapeResult, pass_at_k
from geak_core.api.scaling import (
    Judged,
    accuracy_by_iteration,
    best_speedups,
    judged_from_store,
    mean_speedups,
    pass_at_k_curve,
    result_speedups,
    scaling_summary,
    sequential_scaling,
    speedup_aggregates,
    speedup_by_iteration,
)
from geak_core.engine.store import RunStore

SHAPES = [ShapeResult("a", reference_ms=1.0, candidate_ms=0.5), ShapeResult("b", reference_ms=3.0, candidate_ms=6.0)]


def test_the_three_aggregates_of_two_shapes():
    # ratios 2.0 and 0.5: sum 4/6.5, geometric mean 1, arithmetic mean 1.25
    found = speedup_aggregates(SHAPES)
    assert found["sum"] == pytest.approx(4.0 / 6.5)
    assert found["geomean"] == pytest.approx(1.0)
    assert found["mean_ratio"] == pytest.approx(1.25)


def test_untimed_shapes_give_no_speedup():
    assert speedup_aggregates([ShapeResult("a", reference_ms=1.0)]) == dict.fromkeys(
        ("sum", "geomean", "mean_ratio"))


def test_a_verdict_without_shapes_keeps_the_judges_own_figure_under_its_method():
    result = EvalResult("t", "c", call_ok=True, correct=True, speedup=1.7, speedup_method="geomean",
                        speedup_sum=1.5)
    assert result_speedups(result) == {"sum": 1.5, "geomean": 1.7, "mean_ratio": None}


def test_an_incorrect_candidate_has_no_speedup_whatever_it_was_timed_at():
    result = EvalResult("t", "c", call_ok=True, correct=False, shapes=SHAPES)
    assert set(result_speedups(result).values()) == {None}


def test_accuracy_by_iteration_is_cumulative_pass_at_1_over_lineages():
    judged = [
        Judged("t", 0, 0, call_ok=True, correct=False),
        Judged("t", 0, 1, call_ok=True, correct=True),
        Judged("t", 1, 2, call_ok=True, correct=True),
        Judged("u", 0, 0, call_ok=False, correct=False),
    ]
    curve = accuracy_by_iteration(judged, {"t": 2, "u": 2}, 3)
    assert [c["iteration"] for c in curve] == [1, 2, 3]
    # after round 1: t's lineage 0 ran (1 of 2 lineages), u nothing -> (0.5 + 0) / 2
    assert [c["call_accuracy"] for c in curve] == [0.25, 0.25, 0.5]
    assert [c["execution_accuracy"] for c in curve] == [0.0, 0.25, 0.5]


def _timed(task, lineage, iteration, speedup, correct=True):
    figures = {"sum": speedup, "geomean": speedup / 2, "mean_ratio": speedup * 2}
    return Judged(task, lineage, iteration, True, correct, figures if correct else {},
                  speedup if correct else None)


def test_speedup_by_iteration_averages_each_tasks_best_so_far_over_the_tasks_that_have_one():
    judged = [
        _timed("t", 0, 0, 2.0),
        _timed("t", 1, 1, 3.0),  # another lineage, faster: the task's best from round 2 on
        _timed("t", 0, 2, 9.0, correct=False),  # wrong: never counts, however fast
        _timed("u", 0, 1, 0.5),  # u's first correct kernel joins in round 2, slow: the mean falls
        _timed("gone", 0, 0, 50.0),  # not a task of the run (skipped): left out
    ]
    curve = speedup_by_iteration(judged, {"t": 2, "u": 2, "never": 2}, 3)
    assert [p["iteration"] for p in curve] == [1, 2, 3]
    assert [p["speedup_tasks"] for p in curve] == [1, 2, 2]  # "never" has no correct kernel
    assert [p["mean_speedup"] for p in curve] == [2.0, (3.0 + 0.5) / 2, (3.0 + 0.5) / 2]
    assert [p["speedups"]["sum"] for p in curve] == [2.0, 1.75, 1.75]
    assert [p["speedups"]["geomean"] for p in curve] == [1.0, 0.875, 0.875]
    assert [p["speedups"]["mean_ratio"] for p in curve] == [4.0, 3.5, 3.5]


def test_without_a_timed_correct_candidate_every_round_has_no_speedup_over_no_tasks():
    judged = [Judged("t", 0, 0, True, True, dict.fromkeys(("sum", "geomean", "mean_ratio"))),
              Judged("t", 0, 1, True, False)]
    curve = speedup_by_iteration(judged, {"t": 1}, 2)
    assert curve == [{"iteration": i, "mean_speedup": None, "speedup_tasks": 0,
                      "speedups": {"sum": None, "geomean": None, "mean_ratio": None}} for i in (1, 2)]


def test_sequential_scaling_puts_accuracy_and_speedup_in_one_entry_per_iteration():
    judged = [Judged("t", 0, 0, True, False), _timed("t", 0, 1, 1.5)]
    (first, second) = sequential_scaling(judged, {"t": 1}, 2)
    assert (first["execution_accuracy"], first["mean_speedup"], first["speedup_tasks"]) == (0.0, None, 0)
    assert (second["execution_accuracy"], second["mean_speedup"], second["speedup_tasks"]) == (1.0, 1.5, 1)
    assert speedup_by_iteration([], {}, 3) == [] and speedup_by_iteration(judged, {"t": 1}, 0) == []


def test_pass_at_k_curve_runs_from_1_to_the_number_of_lineages():
    curve = pass_at_k_curve([(4, 1), (4, 0), (4, 4)])
    assert sorted(curve) == [1, 2, 3, 4]
    assert curve[1] == pytest.approx((0.25 + 0 + 1) / 3)
    assert curve[2] == pytest.approx((pass_at_k(4, 1, 2) + 0 + 1) / 3)
    assert curve[4] == pytest.approx(2 / 3)
    values = [curve[k] for k in sorted(curve)]
    assert values == sorted(values)


def test_best_and_mean_speedups_per_method():
    judged = [
        Judged("t", 0, 0, True, True, {"sum": 1.0, "geomean": 2.0, "mean_ratio": None}),
        Judged("t", 0, 1, True, True, {"sum": 3.0, "geomean": 1.0, "mean_ratio": 1.5}),
        Judged("t", 0, 2, True, False, {"sum": 9.0, "geomean": 9.0, "mean_ratio": 9.0}),
    ]
    best = best_speedups(judged)
    assert best == {"sum": 3.0, "geomean": 2.0, "mean_ratio": 1.5}
    assert mean_speedups([best, {"sum": 1.0, "geomean": None, "mean_ratio": None}]) == {
        "sum": 2.0, "geomean": 2.0, "mean_ratio": 1.5}


def test_scaling_summary_of_one_run():
    judged = [Judged("t", 0, 0, True, True, speedup_aggregates(SHAPES)), Judged("t", 1, 0, False, False)]
    data = scaling_summary(judged, {"t": 2}, 2)
    assert data["pass_at_k"] == {"1": 0.5, "2": 1.0}
    assert data["call_pass_at_k"] == {"1": 0.5, "2": 1.0}
    first = data["by_iteration"][0]
    assert {k: first[k] for k in ("iteration", "call_accuracy", "execution_accuracy")} == {
        "iteration": 1, "call_accuracy": 0.5, "execution_accuracy": 0.5}
    assert first["speedups"] == speedup_aggregates(SHAPES) and first["speedup_tasks"] == 1
    assert math.isclose(data["speedups"]["mean_ratio"], 1.25)


def test_judged_from_store_counts_a_re_recorded_verdict_once(tmp_path):
    store = RunStore.create(tmp_path, "s", "", {})
    candidate = Candidate("t/L1/I2", "t", "code", lineage=1, iteration=2)
    store.record_candidate(candidate)
    store.record_evaluation(candidate, EvalResult("t", candidate.id, call_ok=True))
    store.record_evaluation(candidate, EvalResult("t", candidate.id, call_ok=True, correct=True))
    (judged,) = judged_from_store(store)
    assert (judged.task_id, judged.lineage, judged.iteration, judged.correct) == ("t", 1, 2, True)
    store.close()
