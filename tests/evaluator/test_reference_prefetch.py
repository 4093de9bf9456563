"""References in a batch: computed ahead of their candidates, shared while they run, a failure
kept for the task's other candidates, and a budget remembered from an earlier judge."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from types import SimpleNamespace

import pytest
from judge_support import judge_options


@pytest.fixture()
def store(tmp_path):
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.devices import DeviceGate, Runtime, Slot
    from geak_evaluator_triton.reference_store import ReferenceStore

    options = judge_options(triton_cache_dir=str(tmp_path / "cache"))
    store = ReferenceStore(Children(options), [11], 99)
    slot = Slot(0, {}, "CPU 1", DeviceGate())
    runtime = Runtime(mode="interpreter", case_set="small", device_name="cpu", vendor=None, slots=[slot])
    return SimpleNamespace(store=store, runtime=runtime, slot=slot, options=options)


def _run(own_s: float = 0.5):
    from geak_evaluator_triton.reference_run import ReferenceRun

    return ReferenceRun(cases=[], skipped=[], stage2_skipped=[], custom_compare=False, seeds=[], outputs={},
                        own_s=own_s)


def test_a_failed_reference_is_run_once_and_every_later_candidate_gets_its_error(store, mini_tasks):
    from geak_evaluator_triton.run_compare import JudgeError

    calls: list[float] = []

    def failing(*args, **kwargs):
        calls.append(kwargs.get("timeout_s"))
        raise JudgeError("the reference of mini/add did not finish: timed out after 300 s")

    store.store.run = failing
    task = mini_tasks["add"]
    for _ in range(3):
        with pytest.raises(JudgeError, match="timed out after 300 s"):
            store.store.get(task, store.runtime, store.slot)
    pending = store.store.begin(task, store.runtime, store.slot)  # a verdict that overlaps
    assert pending is not None and pending.done
    with pytest.raises(JudgeError, match="timed out after 300 s"):
        pending.wait_done()
    assert len(calls) == 1
    assert store.store.known(task, store.runtime)
    store.store.clear()  # a new session of the same judge tries again
    assert not store.store.known(task, store.runtime)


def test_a_reference_being_computed_is_shared_by_the_next_verdict_of_its_task(store, mini_tasks):
    release = threading.Event()
    calls: list[str] = []

    def slow(task, *args, **kwargs):
        calls.append(task.id)
        release.wait(10)
        return _run()

    store.store.run = slow
    task = mini_tasks["add"]
    first = store.store.begin(task, store.runtime, store.slot, timing=False)
    second = store.store.begin(task, store.runtime, store.slot, timing=False)
    assert first is not None and second is first  # one run, two waiters
    assert not store.store.known(task, store.runtime)
    release.set()
    assert first.wait_finished(10)
    assert first.wait_done() is second.wait_done()
    assert calls == ["add"]
    assert store.store.known(task, store.runtime)
    assert store.store.begin(task, store.runtime, store.slot) is None  # kept: nothing to compute


def test_a_reference_run_before_gets_a_budget_scaled_from_its_own_seconds(store, mini_tasks):
    timeouts: list[float] = []

    def recording(*args, **kwargs):
        timeouts.append(kwargs.get("timeout_s"))
        return _run(own_s=2.5)

    store.store.run = recording
    task = mini_tasks["add"]
    key = store.store.key(task, store.runtime)
    assert store.store.budget(key) == store.options.reference_timeout_s == 300.0  # never run here
    store.store.get(task, store.runtime, store.slot)
    assert timeouts == [300.0]
    # A later judge (same caches) knows its 2.5 s: 20 x 2.5 = 50 s, at least the 120 s floor.
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.reference_store import ReferenceStore

    later = ReferenceStore(Children(store.options), [12], 98)
    later.run = recording
    assert later.budget(key) == 120.0
    later.get(task, store.runtime, store.slot)
    assert timeouts == [300.0, 120.0]
    later.times.store(key, 60.0)  # a slow one: 20 x 60 s, at most reference_timeout_s
    assert later.budget(key) == 300.0


def test_prefetch_starts_each_task_once_in_order_and_never_more_than_its_limit_at_once():
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.reference_store import PendingReference

    evaluator = TritonEvaluator(judge_options(reference_prefetch=2))
    started: list[str] = []
    live: list[PendingReference] = []
    peak = [0]

    def begin(task, runtime, slot, timing=True, lazy=False):
        pending = PendingReference()
        started.append(task.key)
        live.append(pending)
        running = sum(1 for p in live if not p.done)
        peak[0] = max(peak[0], running)

        def finish():
            time.sleep(0.05)
            pending.finish(_run())

        threading.Thread(target=finish, daemon=True).start()
        return pending

    evaluator.references.begin = begin
    costs = {"a": 2.0, "b": 2.0, "c": 300.0, "d": 2.0, "e": 40.0}  # c timed out last time
    evaluator.references.expected_cost = lambda task, runtime: costs[task.key]
    tasks = [SimpleNamespace(key=k) for k in ["a", "b", "a", "c", "d", "b", "e"]]
    try:
        assert evaluator.prefetch(tasks) == 5
    finally:
        evaluator.close()
    assert started == ["c", "e", "a", "b", "d"]  # the costliest first, then the jobs' order
    assert peak[0] == 2


def test_a_references_expected_cost_is_its_last_time_else_its_compile_work(store, mini_tasks, tmp_path):
    from geak_evaluator_triton.reference_run import compile_work

    heavy = tmp_path / "heavy.py"
    heavy.write_text("import triton\n@triton.autotune(configs=[triton.Config({}, num_warps=1),\n"
                     "    triton.Config({}, num_warps=2)], key=[])\n@triton.jit\ndef k(): pass\n"
                     "@jit\ndef j(): pass\n"
                     "@triton.autotune(configs=[triton.Config({'B': b}, num_warps=w)\n"
                     "    for b in [32, 64, 128] for w in (4, 8)], key=[])\n@triton.jit\n"
                     "def mm(a, b):\n    for k in range(4):\n        acc = tl.dot(a, b)\n")
    # k: 2 configs; j: 1; mm: 6 configs x (1 + one dot) x (1 + one loop)
    assert compile_work(str(heavy)) == 2 + 1 + 6 * 2 * 2
    assert compile_work(str(tmp_path / "missing.py")) == 0
    broken = tmp_path / "broken.py"
    broken.write_text("@triton.jit\ndef k(:\n triton.Config({})\n")  # kernels and configs counted
    assert compile_work(str(broken)) == 2
    task = mini_tasks["add"]
    key = store.store.key(task, store.runtime)
    guess = store.store.expected_cost(task, store.runtime)
    assert guess == 1.0 * compile_work(task.to_dict()["reference"]) > 0
    store.store.times.store(key, 311.0, failed=True)  # it ran out of its budget last time
    assert store.store.expected_cost(task, store.runtime) == 311.0
    assert store.store.budget(key) == 300.0  # a failed run gives no scaled budget


def test_prefetch_is_off_under_the_interpreter_by_default_and_on_for_gpus():
    from geak_evaluator_triton.evaluator import TritonEvaluator

    evaluator = TritonEvaluator(judge_options())
    try:
        assert evaluator._prefetch_count() == 0  # interpreter: the CPU slots have no core to spare
        evaluator.runtime().mode = "gpu"  # as a GPU judge with these slots would count
        slots = len(evaluator.runtime().slots)
        assert evaluator._prefetch_count() == max(1, min(slots, max(2, os.cpu_count() or 2) // 2))
    finally:
        evaluator.close()


def test_a_job_whose_reference_is_decided_goes_before_one_whose_reference_still_runs():
    from geak_core.api.components import EvalJob
    from geak_evaluator_triton.evaluator import next_job

    def job(task):
        return EvalJob(SimpleNamespace(key=task), SimpleNamespace(id=task))

    waiting = [job("compiling"), job("quick"), job("other")]
    decided = {"quick"}
    assert next_job(waiting, set(), {}, lambda j: j.task.key in decided, 8) == 1
    # beyond the look-ahead, or with nothing decided: the first free job as before
    assert next_job(waiting, set(), {}, lambda j: j.task.key in decided, 1) == 0
    assert next_job(waiting, set(), {}, lambda j: False, 8) == 0
    # a task with a job in flight and none finished still waits
    assert next_job(waiting, set(), {"compiling": 1}, lambda j: False, 8) == 1


def test_a_reference_that_ran_out_of_its_budget_is_not_run_again_with_no_more_time(store, mini_tasks):
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.reference_store import ReferenceStore
    from geak_evaluator_triton.run_compare import JudgeError, ReferenceFailed

    calls: list[float] = []

    def never_finishes(*args, **kwargs):
        calls.append(kwargs.get("timeout_s"))
        raise ReferenceFailed("the reference of mini/add did not finish: timed out after 300 s",
                              timed_out_s=kwargs.get("timeout_s"))

    task = mini_tasks["add"]
    store.store.run = never_finishes
    with pytest.raises(JudgeError, match="timed out after 300 s"):
        store.store.get(task, store.runtime, store.slot)
    assert calls == [300.0]
    # The next judge on this machine (same caches): its candidates get the error at once.
    later = ReferenceStore(Children(store.options), [12], 98)
    later.run = never_finishes
    key = later.key(task, store.runtime)
    with pytest.raises(JudgeError, match=r"did not finish in 300 s when a judge ran it on .* to try again") as caught:
        later.get(task, store.runtime, store.slot)
    assert later.times.path(key) in str(caught.value)
    assert calls == [300.0]
    assert later.expected_cost(task, store.runtime) > 0  # still ordered first by a prefetch
    # With more time it is tried again, and a finished run clears the record.
    roomier = ReferenceStore(Children(dataclasses.replace(store.options, reference_timeout_s=600.0)), [13], 97)
    roomier.run = lambda *args, **kwargs: calls.append(kwargs.get("timeout_s")) or _run(own_s=1.0)
    roomier.get(task, store.runtime, store.slot)
    assert calls == [300.0, 600.0]
    assert roomier.times.timed_out(key) is None and roomier.budget(key) == 120.0


def test_a_references_cost_adds_its_timing_preparation_and_keeps_it_across_runs(tmp_path):
    from geak_evaluator_triton.reference_run import ReferenceTimes

    times = ReferenceTimes(str(tmp_path))
    times.store_timing("k", 50.0)  # no reference seconds on record: nothing to add it to
    assert times.cost_s("k") == 0.0
    times.store("k", 4.0)
    times.store_timing("k", 55.5)
    assert times.cost_s("k") == 59.5 and times.own_s("k") == 4.0
    times.store("k", 3.0)  # a later run of the reference keeps the preparation's seconds
    assert times.cost_s("k") == 58.5
    times.store("k", 9.0, failed=True)  # a failed one forgets it
    assert times.cost_s("k") == 9.0


def test_a_batch_starts_its_costliest_tasks_first_in_the_given_order_among_equals():
    from geak_core.api.components import EvalJob
    from geak_evaluator_triton.evaluator import TritonEvaluator

    evaluator = TritonEvaluator(judge_options())
    costs = {"a": 2.0, "b": 60.0, "c": 2.0, "d": 300.0}
    asked: list[str] = []

    def expected_cost(task, runtime):
        asked.append(task.key)
        return costs[task.key]

    evaluator.references.expected_cost = expected_cost
    jobs = [EvalJob(SimpleNamespace(key=k), SimpleNamespace(id=f"{k}{i}"))
            for i, k in enumerate(["a", "b", "c", "a", "d", "b"])]
    try:
        ordered = evaluator._costliest_first(jobs, evaluator.expected_costs(job.task for job in jobs))
    finally:
        evaluator.close()
    assert [job.candidate.id for job in ordered] == ["d4", "b1", "b5", "a0", "c2", "a3"]
    assert sorted(asked) == ["a", "b", "c", "d"]  # once a task


def test_the_first_timing_preparation_of_a_reference_is_recorded(mini_tasks):
    """A correct candidate's wait for the reference's timed runs and timer lands in the
    reference's record (what orders the next batch), the first time only."""
    from geak_evaluator_triton.evaluator import TritonEvaluator

    evaluator = TritonEvaluator(judge_options())
    task = dataclasses.replace(mini_tasks["add"], eager=None)  # no eager baseline to time
    try:
        runtime = evaluator.runtime()
        key = evaluator.references.key(task, runtime)
        evaluator.references.times.store(key, 2.0)
        ref = SimpleNamespace(timing_ready=False, timed=["case"])
        calls: list[str] = []

        def ensure_timing(task_, runtime_, slot, ref_, phases=None, producer=None):
            time.sleep(0.2)
            ref_.timing_ready = True
            calls.append("ensure")

        timer = SimpleNamespace(wait_ready=lambda budget: "", release=lambda: None)
        evaluator.references.ensure_timing = ensure_timing
        evaluator._start_timer = lambda *args, **kwargs: timer
        assert evaluator._prepare_timing(task, runtime, runtime.slots[0], ref) == (timer, "")
        first = evaluator.references.times.cost_s(key)
        assert 2.2 <= first < 10.0
        evaluator._prepare_timing(task, runtime, runtime.slots[0], ref)  # ready: not recorded again
        assert evaluator.references.times.cost_s(key) == first
    finally:
        evaluator.close()


def test_a_tasks_reference_key_is_computed_once_until_its_reference_file_changes(store, mini_tasks, tmp_path,
                                                                               monkeypatch):
    """The scheduler asks for the keys of many waiting jobs whenever a slot frees: a key is
    kept per task, and a changed reference file gives a new one."""
    import dataclasses as dc
    import shutil

    from geak_evaluator_triton import reference_store

    reference = tmp_path / "reference.py"
    shutil.copy(mini_tasks["add"].reference, reference)
    task = dc.replace(mini_tasks["add"], reference=str(reference))
    payloads = []
    real = reference_store.task_payload
    monkeypatch.setattr(reference_store, "task_payload", lambda t: payloads.append(t) or real(t))
    first = store.store.key(task, store.runtime)
    assert [store.store.key(task, store.runtime) for _ in range(50)] == [first] * 50
    assert len(payloads) == 1
    reference.write_text(reference.read_text() + "\n# changed\n")
    assert store.store.key(task, store.runtime) != first
    assert len(payloads) == 2
    other = dc.replace(task, id="add_copy")  # another task object: its own key
    assert store.store.key(other, store.runtime) != store.store.key(task, store.runtime)
