"""A case the judge flags as impossible (``above_peak``) counts in no speedup.

The judge marks such a case on its ``ShapeResult`` (``flags``); every aggregate of
``geak_core.api.scaling`` is over the counted cases alone, so everything that reads a
verdict's speedup sees the same: the headline, the task's best candidate, the run's
summaries (the agent's and ``geak-core eval``'s), the optimizer's archive, the lineage's best
and the tuner's choice. Each is checked here on the same three verdicts:

* A: case0 timed at 3.22x, flagged above the peak, case1 at 0.9x; counted, its 2.06x
  (mean of ratios) would make it the best; left out, it is at 0.9x;
* B: an honest 1.1x on both cases;
* C: both cases flagged: no speedup at all.
"""

from __future__ import annotations

import pytest
from geak_core.api.components import RoundPlan, TunedVariant, TuneResult
from geak_core.api.lineage import LineageState
from geak_core.api.model import Candidate, EvalResult, ShapeResult
from geak_core.api.scaling import (
    Judged,
    eager_speedup,
    result_speedups,
    scaling_summary,
    set_speedups,
    speedup_aggregates,
    uncounted_shapes,
)
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.report import summarize_run, summarize_task
from geak_core.engine.tuning import kept_variant, measured_speedup, untimed_reason

TASK = Task(suite="rocm", id="t", instruction="add", entry_points=[EntryPoint("add_kernel")], harness="m:H")
RATIOS = {"A": ((3.22, True), (0.9, False)), "B": ((1.1, False), (1.1, False)), "C": ((4.0, True), (4.0, True))}


def shapes(name: str) -> list[ShapeResult]:
    return [ShapeResult(f"case{i}", reference_ms=1.0, candidate_ms=1.0 / ratio, eager_ms=2.0,
                        flags=["above_peak"] if flagged else [])
            for i, (ratio, flagged) in enumerate(RATIOS[name])]


def verdict(name: str, method: str = "mean_ratio") -> EvalResult:
    """A correct, timed verdict on ``name``'s cases, its figures filled as the judge fills them."""
    result = EvalResult("t", name, call_ok=True, correct=True, shapes=shapes(name), performance_measured=True,
                        flags=["above_peak"] if any(f for _, f in RATIOS[name]) else [])
    set_speedups(result, method)
    result.speedup_vs_eager = eager_speedup(result.shapes, method)
    return result


def test_a_flagged_case_is_left_out_of_every_aggregate():
    every = {"sum": 0.9, "geomean": 0.9, "mean_ratio": 0.9}
    assert speedup_aggregates(shapes("A")) == pytest.approx(every)
    assert [s.case for s in uncounted_shapes(shapes("A"))] == ["case0"]
    for method in ("sum", "geomean", "mean_ratio"):
        result = verdict("A", method)
        assert result.speedup == pytest.approx(0.9) and result.speedup_method == method
        assert result_speedups(result) == pytest.approx(every)
        assert result.speedup_vs_eager == pytest.approx(2.0 / (1.0 / 0.9))  # eager over case1 alone
    # counted, the flagged case would have made A a 2.06x candidate
    honest = [ShapeResult(s.case, s.reference_ms, s.candidate_ms) for s in shapes("A")]
    assert speedup_aggregates(honest)["mean_ratio"] == pytest.approx(2.06)


def test_a_verdict_all_of_whose_cases_are_flagged_has_no_speedup():
    result = verdict("C")
    assert result.speedup is None and result.speedup_vs_eager is None
    assert (result.speedup_sum, result.speedup_geomean, result.speedup_mean_ratio) == (None, None, None)
    # a figure stored beside such shapes is not taken instead
    result.speedup, result.speedup_sum = 4.0, 4.0
    assert result_speedups(result) == dict.fromkeys(("sum", "geomean", "mean_ratio"))
    assert Judged.from_result("t", 0, 0, verdict("C")).speedup is None


def test_the_flag_travels_with_the_stored_verdict_and_old_records_count():
    stored = EvalResult.from_dict(verdict("A").to_dict())
    assert [s.flags for s in stored.shapes] == [["above_peak"], []]
    assert [s.counted for s in stored.shapes] == [False, True]
    assert result_speedups(stored)["mean_ratio"] == pytest.approx(0.9)
    old = ShapeResult("a", reference_ms=1.0, candidate_ms=0.5).to_dict()
    del old["flags"]
    assert ShapeResult.from_dict(old).counted


def test_the_tasks_best_candidate_and_the_run_summary_leave_the_flagged_case_out():
    results = [(0, "A", verdict("A")), (1, "B", verdict("B")), (2, "C", verdict("C"))]
    task = summarize_task(TASK, 3, results)
    assert task.best_candidate_id == "B" and task.best_speedup == pytest.approx(1.1)
    run = summarize_run("r", "finished", [task], 3, {})
    assert run.mean_speedup == pytest.approx(1.1)
    judged = [Judged.from_result("t", lineage, 0, r) for lineage, _, r in results]
    scaling = scaling_summary(judged, {"t": 3}, 1)
    assert scaling["speedups"] == pytest.approx({"sum": 1.1, "geomean": 1.1, "mean_ratio": 1.1})
    assert scaling["by_iteration"][0]["mean_speedup"] == pytest.approx(1.1)
    # A alone: its counted case
    alone = summarize_run("r", "finished", [summarize_task(TASK, 1, results[:1])], 1, {})
    assert alone.mean_speedup == pytest.approx(0.9)


def test_the_eval_commands_summary_leaves_the_flagged_case_out():
    from geak_core.cli.cli_eval import summarize

    summary = summarize([(TASK, verdict(name)) for name in "ABC"], [1])
    assert summary["mean_speedup"] == pytest.approx((0.9 + 1.1) / 2)  # C has none
    assert summary["speedups"]["mean_ratio"] == pytest.approx((0.9 + 1.1) / 2)
    (per_task,) = summary["per_task"]
    assert per_task["best_candidate_id"] == "B" and per_task["best_speedup"] == pytest.approx(1.1)


def test_the_optimizers_history_ranks_by_the_counted_cases():
    from geak_optimizer_opro.archive import Archive

    archive = Archive(1)
    for name in "AB":
        archive.offer(Candidate(name, "t", f"# {name}\n"), verdict(name))
    assert [e.candidate_id for e in archive.ascending()] == ["B"] and archive.best_speedup() == pytest.approx(1.1)
    full = Archive(3)
    for name in "ABC":
        full.offer(Candidate(name, "t", f"# {name}\n"), verdict(name))
    # C has no measured speedup: shown first, below every measured entry
    assert [(e.candidate_id, e.speedup) for e in full.ascending()] == [
        ("C", None), ("A", pytest.approx(0.9)), ("B", pytest.approx(1.1))]
    # the latencies it shows say which case was flagged
    assert [row.get("flags") for row in full.ascending()[1].latencies] == [["above_peak"], None]


def test_the_lineages_best_is_the_honest_candidate():
    from geak_agent_geak.policy import GeakPolicy

    state = LineageState(TASK, 0)
    policy = GeakPolicy()
    for name in "BAC":
        policy.after_round(state, RoundPlan("optimize"), [(Candidate(name, "t", f"# {name}\n"), verdict(name))])
    assert state.best is not None and state.best.id == "B"
    assert state.best_speedup == pytest.approx(1.1)


def test_the_tuner_keeps_no_variant_whose_speed_came_from_a_flagged_case():
    def variant(name: str) -> TunedVariant:
        return TunedVariant(Candidate(f"v{name}", "t", f"# {name}\n", origin="tune"), "BLOCK 256->512", "",
                            verdict(name))

    parent = verdict("B")
    assert measured_speedup(variant("A").result) == pytest.approx(0.9)
    assert kept_variant(TuneResult([variant("A")], best=variant("A")), parent) is None
    assert measured_speedup(verdict("C")) is None
    assert kept_variant(TuneResult([variant("C")], best=variant("C")), verdict("A")) is None
    # a candidate with no counted case is not tuned: nothing says which variant is faster
    result = verdict("C")
    result.performance_note = "no speedup: every timed case (2) was measured faster than the hardware allows"
    assert "every timed case (2) was measured faster" in untimed_reason(result)
