"""The geak policy on its own: which round comes next, and what verdicts change."""

from __future__ import annotations

import copy

from geak_agent_geak.policy import GeakPolicy, PolicyOptions
from geak_core.api.components import RoundPlan
from geak_core.api.lineage import LineageState
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import EntryPoint, Task

TASK = Task(suite="s", id="t", instruction="", entry_points=[EntryPoint("k")], harness="m:H")


def verdict(cid: str, correct: bool, speedup: float | None = None) -> tuple[Candidate, EvalResult]:
    return (Candidate(cid, "t", f"code {cid}", strategy=cid),
            EvalResult("t", cid, call_ok=True, correct=correct, speedup=speedup))


def test_choosing_the_next_round_changes_nothing():
    policy = GeakPolicy(PolicyOptions(max_debug_attempts=0))
    state = LineageState(TASK, 0)
    policy.after_round(state, RoundPlan("generate"), [verdict("a", False)])
    before = copy.deepcopy(state)
    assert policy.next_round(state) == policy.next_round(state) == RoundPlan("restart")
    assert state == before


def test_failed_fixes_in_a_row_end_in_a_restart():
    policy = GeakPolicy(PolicyOptions(max_debug_attempts=2))
    state = LineageState(TASK, 0)
    assert policy.next_round(state).kind == "generate"
    policy.after_round(state, RoundPlan("generate"), [verdict("a", False)])
    plans = []
    for cid in ("b", "c"):
        plan = policy.next_round(state)
        plans.append((plan.kind, plan.attempt, plan.max_attempts))
        policy.after_round(state, plan, [verdict(cid, False)])
    assert plans == [("reflect", 1, 2), ("reflect", 2, 2)]
    assert policy.next_round(state).kind == "restart"
    assert state.restart(3) == "c" and policy.next_round(state).kind == "generate"


def test_a_faster_correct_candidate_is_an_improvement_and_a_slower_one_is_not():
    policy = GeakPolicy()
    state = LineageState(TASK, 0)
    assert policy.after_round(state, RoundPlan("generate"), [verdict("a", True, 1.0)])
    assert not policy.after_round(state, RoundPlan("optimize"), [verdict("b", True, 0.5)])
    assert policy.after_round(state, RoundPlan("optimize"), [verdict("c", False), verdict("d", True, 2.0)])
    assert state.last.id == state.best.id == "d" and state.best_speedup == 2.0


def test_a_failed_proposal_is_fixed_up_to_its_limit_then_dropped_for_the_best():
    policy = GeakPolicy(PolicyOptions(max_perf_debug_attempts=2))
    state = LineageState(TASK, 0)
    policy.after_round(state, RoundPlan("generate"), [verdict("a", True, 1.0)])
    policy.after_round(state, RoundPlan("optimize"), [verdict("p0", False), verdict("p1", False)])
    assert state.last.id == "p0"
    plans = []
    for cid in ("f1", "f2"):
        plan = policy.next_round(state)
        plans.append((plan.kind, plan.attempt, plan.fixing_optimized))
        policy.after_round(state, plan, [verdict(cid, False)])
    assert plans == [("reflect", 1, True), ("reflect", 2, True)]
    assert state.last.id == "a" and policy.next_round(state).kind == "optimize"
    assert state.failed_fixes == 0  # a lineage with a correct candidate is never trapped
