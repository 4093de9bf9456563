"""A task's first candidate runs beside its reference (``overlap_reference``).

The candidate's child starts once the reference child has sent its case table; each
comparison waits for its reference output, and timing for the whole reference. The verdicts
must be the ones the judge gives with the reference first: right kernels pass, cheats and
wrong kernels fail in the same stage, a failing reference is a judge error, and a reference
redone on the protocol's seed alone makes the judge run the candidate again on that plan.
Under the interpreter the option is off unless set to "on", as here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from judge_support import ADD_RAISES, PERM_ZEROS, cheat_code, judge_options


def _judge(**overrides):
    from geak_evaluator_triton.evaluator import TritonEvaluator

    return TritonEvaluator(judge_options(overlap_reference="on", **overrides))


def _watch_children(judge):
    """Record, for each candidate child, whether the reference was still running then."""
    started = []
    original = judge.run_candidate

    def run_candidate(*args, live=None, **kwargs):
        started.append(live is not None and not live.done)
        return original(*args, live=live, **kwargs)

    judge.run_candidate = run_candidate
    return started


def test_first_candidates_run_beside_their_references_and_get_the_same_verdicts(mini_tasks):
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    # One candidate per task, so that each is its task's first: each runs beside its reference.
    cases = {
        "add": ("add", Path(mini_tasks["add"].reference).read_text(), None),
        "rowsum_fp16": ("rowsum", cheat_code("rowsum_fp16"), "stage2"),
        "perm_zeros": ("perm", PERM_ZEROS, "stage1"),  # the harness's own compare hook
        "scale_cache": ("scale", cheat_code("scale_cache"), "stage1"),
        "stats": ("stats", Path(mini_tasks["stats"].reference).read_text(), None),
    }
    judge = _judge(workers=2)
    started = _watch_children(judge)
    try:
        jobs = [EvalJob(mini_tasks[task_id], Candidate(id=name, task_id=task_id, code=code))
                for name, (task_id, code, _) in cases.items()]
        results = {job.candidate.id: result for job, result in judge.evaluate_many(jobs)}
        # The same task again: its reference is kept now, so this one runs after it, as before.
        again = judge.evaluate(mini_tasks["add"], Candidate(id="again", task_id="add",
                                                            code=cheat_code("add_nondeterministic")))
    finally:
        judge.close()
    for name, (_, _, stage) in cases.items():
        result = results[name]
        assert "judge_error" not in result.flags, result.reason
        assert result.correct is (stage is None), (name, result.reason)
        assert result.failed_stage == stage, (name, result.reason)
        assert result.phases["reference.wall"] >= result.phases["reference"], result.phases
        assert "reference.replanned" not in result.phases
    assert started[:len(cases)] == [True] * len(cases), "each first candidate started beside its reference"
    assert started[len(cases):] == [False]
    assert "results differ between two runs on the same inputs" in again.reason
    assert "reference.wall" not in again.phases


def test_a_reference_that_fails_while_its_candidate_runs_makes_a_judge_error(mini_tasks, tmp_path):
    from geak_core.api.model import Candidate

    broken = tmp_path / "add_reference.py"
    broken.write_text(ADD_RAISES)
    task = dataclasses.replace(mini_tasks["add"], reference=str(broken))
    judge = _judge(workers=1)
    try:
        result = judge.evaluate(task, Candidate(id="c", task_id="add",
                                                code=Path(mini_tasks["add"].reference).read_text()))
    finally:
        judge.close()
    assert "judge_error" in result.flags and result.failed_stage is None
    assert "the reference of mini/add failed" in result.reason


@pytest.mark.parametrize("candidate", ["honest", "wrong"])
def test_a_reference_redone_on_the_protocol_seed_alone_has_the_candidate_judged_on_that_plan(
        mini_tasks, monkeypatch, candidate):
    """The reference sends its table and outputs, then fails on the judge's secret seed: it is
    redone on the task's first seed alone, and the child that ran on the first plan is
    discarded."""
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.reference_store import ReferenceStore
    from geak_evaluator_triton.run_compare import ReferenceFailed

    task = mini_tasks["add"]
    original = ReferenceStore.run

    def run(self, task_, runtime, slot, seeds, **kwargs):
        result = original(self, task_, runtime, slot, seeds, **kwargs)
        extra = [s for s in seeds if s not in task_.seeds]
        if extra:  # as if the reference had crashed on the secret seed, after its table
            raise ReferenceFailed(f"the reference of {task_.key} failed at stage1 seed {extra[0]}", seed=extra[0])
        return result

    monkeypatch.setattr(ReferenceStore, "run", run)
    code = Path(task.reference).read_text() if candidate == "honest" else cheat_code("add_unwritten")
    judge = _judge(workers=1, secret_seeds=1)
    started = _watch_children(judge)
    try:
        result = judge.evaluate(task, Candidate(id="c", task_id="add", code=code))
    finally:
        judge.close()
    assert "reference_seed_fallback" in result.flags, result.reason
    assert "judge_error" not in result.flags, result.reason
    assert started == [True, False], "the first child is dropped and the candidate judged again"
    assert "reference.replanned" in result.phases
    if candidate == "honest":
        assert result.correct, result.reason
    else:
        assert result.failed_stage == "stage1", result.reason


def test_overlap_reference_is_an_option_with_three_values():
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    assert TritonEvaluatorOptions().overlap_reference == "auto"
    assert "overlap_reference" in "; ".join(TritonEvaluatorOptions(overlap_reference="always").validate())
