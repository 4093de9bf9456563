"""A candidate that fails on its own is decided even where its task's reference fails.

Published benchmarks hold references that fail on a given GPU and Triton (they do not
compile, or fault, or never finish in their budget). A candidate that runs beside such a
reference (``overlap_reference``) and fails at import, by the contract or raising in a run,
without needing an output the reference did not give, gets its own verdict, flagged
``decided_without_reference``; one that needed the reference is a judge error as before.
Later candidates of the task run on the failed run's case table, with no outputs to
compare, and are decided the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from judge_support import ADD_IMPORT_FAILS, ADD_RAISES, judge_options


def test_candidates_that_fail_on_their_own_are_decided_beside_a_failing_reference(mini_tasks, tmp_path):
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator

    broken = tmp_path / "add_reference.py"
    broken.write_text(ADD_RAISES)
    task = dataclasses.replace(mini_tasks["add"], reference=str(broken))
    judge = TritonEvaluator(judge_options(overlap_reference="on", workers=1,
                                          triton_cache_dir=str(tmp_path / "cache")))
    try:
        first = judge.evaluate(task, Candidate(id="import", task_id="add", code=ADD_IMPORT_FAILS))
        later = judge.evaluate(task, Candidate(id="raises", task_id="add", code=ADD_RAISES))
        honest = judge.evaluate(task, Candidate(id="honest", task_id="add",
                                                code=Path(mini_tasks["add"].reference).read_text()))
    finally:
        judge.close()
    assert first.failed_stage == "import" and not first.correct and not first.call_ok, first.reason
    assert "judge_error" not in first.flags
    # Decided when the reference's failure came, or before it (failed_alone): either way its own.
    if "decided_without_reference" in first.flags:
        assert "the task's reference failed here too" in first.reason
    else:
        assert "reference.unfinished" in first.phases, first.phases
    assert later.failed_stage == "run" and "judge_error" not in later.flags, later.reason
    assert "decided_without_reference" in later.flags
    # It needs the reference's outputs to be judged: no verdict, as before.
    assert "judge_error" in honest.flags and "reference_failed" in honest.flags, honest.reason
    assert honest.failed_stage is None and "decided_without_reference" not in honest.flags


def test_a_failed_runs_case_table_is_recorded_for_later_judges(tmp_path):
    from geak_evaluator_triton.reference_run import ReferenceTimes

    times = ReferenceTimes(str(tmp_path))
    table = {"cases": [], "skipped": [], "stage2_skipped": [], "custom_compare": False,
             "reference_file": "", "weak": [], "fixed_seeds": [0, 1]}
    times.store("k", 12.0, failed=True, timed_out_s=300.0, table=table)
    assert times.failed_table("k") == table and times.table("k") is None
    assert times.timed_out("k")["budget_s"] == 300.0
    times.store("k", 3.0, table=table)  # finished this time: a table to plan on, no failed one
    assert times.table("k") == table and times.failed_table("k") is None


def test_a_reference_not_run_again_after_running_out_of_time_still_lets_candidates_be_decided(
        mini_tasks, tmp_path):
    """A later judge refuses to run a reference that ran out of its budget before (no more
    time now); its recorded case table still plans the candidate, which is decided if it
    fails on its own."""
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator

    task = mini_tasks["add"]
    options = judge_options(overlap_reference="on", workers=1, triton_cache_dir=str(tmp_path / "cache"))
    first = TritonEvaluator(options)
    try:  # a run that finishes records the task's case table; it is made a timed-out one here
        first.evaluate(task, Candidate(id="import", task_id="add", code=ADD_IMPORT_FAILS))
        key = first.references.key(task, first.runtime())
        times = first.references.times
        table = times.table(key)
        assert table is not None
        times.store(key, 40.0, failed=True, timed_out_s=options.reference_timeout_s, table=table)
    finally:
        first.close()
    later = TritonEvaluator(options)
    try:
        raises = later.evaluate(task, Candidate(id="raises", task_id="add", code=ADD_RAISES))
        honest = later.evaluate(task, Candidate(id="honest", task_id="add", code=Path(task.reference).read_text()))
    finally:
        later.close()
    assert raises.failed_stage == "run" and "decided_without_reference" in raises.flags, raises.reason
    assert "is not run again with no more time" in raises.reason
    assert "judge_error" in honest.flags and "reference_failed" in honest.flags, honest.reason


def test_a_candidate_that_fails_on_its_own_is_not_held_by_a_slow_reference(mini_tasks, tmp_path):
    """Its first run fails (or its import) while the reference still runs: the verdict comes
    at once, and the reference goes on for the task's later candidates."""
    import time

    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator

    slow = tmp_path / "add_reference.py"
    slow.write_text("import time\ntime.sleep(30)\n" + Path(mini_tasks["add"].reference).read_text())
    task = dataclasses.replace(mini_tasks["add"], reference=str(slow))
    judge = TritonEvaluator(judge_options(overlap_reference="on", workers=1,
                                          triton_cache_dir=str(tmp_path / "cache")))
    try:
        began = time.monotonic()
        result = judge.evaluate(task, Candidate(id="raises", task_id="add", code=ADD_RAISES))
        took = time.monotonic() - began
        honest = judge.evaluate(task, Candidate(id="honest", task_id="add",
                                                code=Path(mini_tasks["add"].reference).read_text()))
    finally:
        judge.close()
    assert result.failed_stage == "run" and "judge_error" not in result.flags, result.reason
    assert "reference.unfinished" in result.phases and took < 25, (took, result.phases)
    assert honest.correct, honest.reason  # the same reference, finished for it
