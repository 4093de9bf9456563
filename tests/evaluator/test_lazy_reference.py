"""A reference with a recorded case table runs only when its candidate needs it
(``lazy_reference``).

A judge that ran a task's reference records its case table beside its seconds. A later
judge (same task, file, device, options and fixed seeds) plans that task's candidates on
the table at once and starts the reference child only when a candidate produces outputs
to compare, or reaches a seed that is not one of the task's own: a candidate that fails
at import or raises on a fixed seed's run is decided without a reference child. The
verdicts must be the ones the judge gives with the reference run first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_support import ADD_IMPORT_FAILS, ADD_RAISES, cheat_code, judge_options


def _judge(cache, **overrides):
    from geak_evaluator_triton.evaluator import TritonEvaluator

    settings = {"overlap_reference": "on", "workers": 1, "triton_cache_dir": str(cache)}
    settings.update(overrides)
    return TritonEvaluator(judge_options(**settings))


@pytest.fixture
def reference_children(monkeypatch):
    """How many reference children ran (ReferenceStore.run calls), as a one-item list."""
    from geak_evaluator_triton.reference_store import ReferenceStore

    count = [0]
    original = ReferenceStore.run

    def run(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ReferenceStore, "run", run)
    return count


def _candidates(task):
    from geak_core.api.model import Candidate

    codes = {
        "import_fails": ADD_IMPORT_FAILS,
        "raises": ADD_RAISES,
        "wrong": cheat_code("add_unwritten"),
        "honest": Path(task.reference).read_text(),
    }
    return {name: Candidate(id=name, task_id=task.id, code=code) for name, code in codes.items()}


def _verdict(result):
    return result.correct, result.call_ok, result.failed_stage, result.reason, "judge_error" in result.flags


def test_a_recorded_table_decides_early_failures_without_a_reference_child(mini_tasks, tmp_path,
                                                                           reference_children):
    task = mini_tasks["add"]
    candidates = _candidates(task)
    first = _judge(tmp_path, lazy_reference="off")
    try:  # runs the reference once (the table is recorded) and gives the verdicts to match
        expected = {name: _verdict(first.evaluate(task, c)) for name, c in candidates.items()}
    finally:
        first.close()
    assert reference_children[0] == 1
    assert expected["import_fails"][2] == "import" and expected["raises"][2] == "run"
    assert expected["wrong"][2] == "stage1" and expected["honest"][0] is True

    later = _judge(tmp_path, lazy_reference="on")
    children = {}
    try:
        for name in ("import_fails", "raises", "wrong", "honest"):
            before = reference_children[0]
            result = later.evaluate(task, candidates[name])
            children[name] = reference_children[0] - before
            assert _verdict(result) == expected[name], (name, result.reason)
            if name in ("import_fails", "raises"):  # planned on the table, no reference run
                assert "reference.start" not in result.phases, result.phases
    finally:
        later.close()
    # The two that fail before any output is compared need no reference child; the wrong one
    # needs it to be found wrong, and is the one that runs it (the honest one finds it kept).
    assert children == {"import_fails": 0, "raises": 0, "wrong": 1, "honest": 0}, children


def test_without_a_recorded_table_or_with_other_fixed_seeds_the_reference_runs(mini_tasks, tmp_path,
                                                                               reference_children):
    task = mini_tasks["add"]
    candidates = _candidates(task)
    judge = _judge(tmp_path, lazy_reference="on")
    try:  # nothing recorded yet: the reference runs for the first candidate, whatever it does
        assert judge.evaluate(task, candidates["import_fails"]).failed_stage == "import"
    finally:
        judge.close()
    assert reference_children[0] == 1
    again = _judge(tmp_path, lazy_reference="on")
    try:  # recorded now: planned on the table, no reference child
        assert again.evaluate(task, candidates["raises"]).failed_stage == "run"
    finally:
        again.close()
    assert reference_children[0] == 1
    other = _judge(tmp_path, lazy_reference="on", seeds=[7])
    try:  # the table was recorded on the task's seeds (0, 1): not this judge's plan
        assert other.evaluate(task, candidates["raises"]).failed_stage == "run"
    finally:
        other.close()
    assert reference_children[0] == 2


def test_a_batch_leaves_recorded_references_to_the_candidates_that_need_them(mini_tasks, tmp_path,
                                                                              reference_children):
    """In a batch (``auto``: several verdicts in flight) a prefetch does not compute a
    reference whose table is recorded: failing candidates cost no reference child, and a
    correct one still gets its reference and its verdict."""
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    add, rowsum = mini_tasks["add"], mini_tasks["rowsum"]
    warm = _judge(tmp_path, lazy_reference="off", workers=2)
    try:
        jobs = [EvalJob(t, Candidate(id=f"ref:{t.id}", task_id=t.id, code=Path(t.reference).read_text()))
                for t in (add, rowsum)]
        assert all(r.correct for _, r in warm.evaluate_many(jobs))
    finally:
        warm.close()
    assert reference_children[0] == 2

    judge = _judge(tmp_path, workers=2, reference_prefetch=2)  # lazy_reference "auto"
    jobs = [EvalJob(add, Candidate(id="a1", task_id="add", code=ADD_RAISES)),
            EvalJob(add, Candidate(id="a2", task_id="add", code=ADD_IMPORT_FAILS)),
            EvalJob(rowsum, Candidate(id="r1", task_id="rowsum", code=cheat_code("rowsum_fp16"))),
            EvalJob(rowsum, Candidate(id="r2", task_id="rowsum", code=Path(rowsum.reference).read_text()))]
    try:
        results = {job.candidate.id: result for job, result in judge.evaluate_many(jobs)}
    finally:
        judge.close()
    assert results["a1"].failed_stage == "run" and results["a2"].failed_stage == "import"
    assert results["r1"].failed_stage == "stage2", results["r1"].reason
    assert results["r2"].correct, results["r2"].reason
    assert reference_children[0] == 3  # rowsum's alone: add's candidates never needed theirs
