"""The baseline timers' pool: a timer given to a candidate is never closed under it."""

from __future__ import annotations

import threading
from types import SimpleNamespace


def _real_release():
    from geak_evaluator_triton.baseline_timer import TimerChild

    return TimerChild.release


REAL_RELEASE = _real_release()


class FakeTimer:
    """What TimerPool needs of a TimerChild, without a child."""

    def __init__(self, key, children, task, runtime, slot, ref, warm_budget_s=0.0):
        self.key = key
        self.device = slot.label
        self.lock = threading.Lock()
        self.users = 0
        self.pool_lock = None
        self.closed = False
        children.started.append(self)

    @property
    def alive(self):
        return not self.closed

    def close(self):
        self.closed = True

    def release(self):
        REAL_RELEASE(self)


def _pool(monkeypatch):
    from geak_evaluator_triton import baseline_timer

    monkeypatch.setattr(baseline_timer, "TimerChild", FakeTimer)
    return baseline_timer.TimerPool(SimpleNamespace(started=[]))


def _start(pool, task, use=True):
    ref = SimpleNamespace(seeds=[task], timed=[])
    return pool.start(f"ref-{task}", SimpleNamespace(), SimpleNamespace(), SimpleNamespace(label="gpu0", env={}),
                      ref, use=use)


def test_timers_in_use_are_kept_and_the_pool_grows_past_its_size_instead(monkeypatch):
    from geak_evaluator_triton.baseline_timer import TIMERS_PER_DEVICE

    pool = _pool(monkeypatch)
    given = [_start(pool, i) for i in range(TIMERS_PER_DEVICE + 2)]
    assert not any(t.closed for t in given)  # every one is some candidate's until released
    assert [t.users for t in given] == [1] * len(given)
    given[0].release()
    _start(pool, 99)  # room is made by closing the one nobody uses
    assert given[0].closed and not any(t.closed for t in given[1:])


def test_a_timer_started_to_warm_up_is_not_in_use_and_a_user_counts_once(monkeypatch):
    pool = _pool(monkeypatch)
    warming = _start(pool, 1, use=False)
    assert warming.users == 0
    again = _start(pool, 1)
    assert again is warming and warming.users == 1
    warming.release()
    warming.release()  # a second release does not go below zero
    assert warming.users == 0


def test_a_session_waits_for_the_timer_a_minute_plus_twenty_calls_of_the_longest_case():
    from geak_evaluator_triton.candidate_run import TIMER_ANSWER_S, timer_answer_s

    assert timer_answer_s({}, 900.0) == TIMER_ANSWER_S
    assert timer_answer_s({"a": 0.01, "b": 2000.0}, 900.0) == TIMER_ANSWER_S + 40.0  # 2 s calls
    assert timer_answer_s({"huge": 60_000.0}, 900.0) == 900.0  # at most the reference's timeout


def test_a_task_whose_first_job_is_still_running_waits_while_other_tasks_have_work():
    from geak_core.api.components import EvalJob
    from geak_evaluator_triton.evaluator import next_job

    def job(task):
        return EvalJob(SimpleNamespace(key=task), SimpleNamespace(id=task))

    waiting = [job("slow"), job("slow"), job("fast"), job("slow"), job("fast")]
    # "slow" has its first job in flight and no verdict yet: "fast" goes first
    assert next_job(waiting, set(), {"slow": 1}) == 2
    # once a "slow" job has finished (its reference is known), file order again
    assert next_job(waiting, {"slow"}, {"slow": 1}) == 0
    # only jobs of a task still on its first: start one anyway rather than idle a slot
    assert next_job([job("slow"), job("slow")], set(), {"slow": 1}) == 0
    assert next_job([job("new")], set(), {"slow": 1}) == 0


def test_judge_jobs_is_evaluate_manys_scheduling_and_stops_starting_at_a_deadline():
    """`geak-core eval` (evaluate_many) and bench/tritonbench_published.py schedule through
    judge_jobs: first jobs of tasks first, and, with ``may_start``, no start once it says no
    while the jobs in flight still finish and are yielded."""
    import threading
    import time

    from geak_core.api.components import EvalJob
    from geak_evaluator_triton.evaluator import judge_jobs

    def job(task, name):
        return EvalJob(SimpleNamespace(key=task), SimpleNamespace(id=name))

    started: list[str] = []
    lock = threading.Lock()

    def evaluate(task, candidate):
        with lock:
            started.append(candidate.id)
        time.sleep(0.3 if candidate.id == "slow-1" else 0.02)
        return candidate.id

    jobs = [job("slow", "slow-1"), job("slow", "slow-2"), job("fast", "fast-1"), job("fast", "fast-2")]
    results = [result for _, result in judge_jobs(evaluate, jobs, 2)]
    assert sorted(results) == ["fast-1", "fast-2", "slow-1", "slow-2"]
    assert started[:2] == ["slow-1", "fast-1"]  # slow-2 waits for slow-1's verdict while fast work remains

    started.clear()
    allowed = iter([True, True, False])  # two starts, then the deadline
    got = [result for _, result in judge_jobs(evaluate, jobs, 2, may_start=lambda: next(allowed, False))]
    assert sorted(got) == sorted(started) and len(started) == 2  # both in flight finished and came back


def test_a_correct_candidates_timer_starts_beside_the_references_timed_runs(mini_tasks):
    """``_prepare_timing``: the baseline's timer is started (warming up) before the reference's
    timed runs, and the same timer is then taken for the candidate."""
    from geak_core.api.tasks import Case
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.reference_run import ReferenceRun
    from judge_support import judge_options

    events, budgets = [], []
    ref = ReferenceRun(cases=[Case(name="n4096")], skipped=[], stage2_skipped=[], custom_compare=False,
                       seeds=[0, 1], outputs={}, timing_ready=False)

    class Timer:
        def wait_ready(self, timeout):
            events.append("wait_ready")
            return ""

        def release(self):
            events.append("release")

    timer = Timer()

    def start(key, task, runtime, slot, run, use=False, warm_budget_s=0.0):
        events.append(("timer", use))
        budgets.append(warm_budget_s)
        return timer

    def ensure_timing(task, runtime, slot, run, phases=None):
        events.append("reference timed runs")
        run.timing_ready = True

    judge = TritonEvaluator(judge_options())
    judge.timers = SimpleNamespace(start=start, close=lambda: None)
    judge.references = SimpleNamespace(
        ensure_timing=ensure_timing, key=lambda task, runtime: "k", clear=lambda: None,
        times=SimpleNamespace(store_timing=lambda key, seconds: events.append("stored")))
    try:
        got, why = judge._prepare_timing(mini_tasks["rowsum"], SimpleNamespace(), SimpleNamespace(), ref)
    finally:
        judge.timers = SimpleNamespace(close=lambda: None)
    assert (got, why) == (timer, "")
    assert events == [("timer", False), "reference timed runs", ("timer", True), "wait_ready", "stored"], events
    # the timer's warm-up has the reference's own budget (its time unknown here: the ceiling)
    assert budgets == [judge.options.reference_timeout_s] * 2


def test_a_timers_warm_up_lets_the_device_go_while_compiling_and_has_a_budget():
    """The baseline's warm-up holds the device shared only while it runs kernels: a compile
    (an autotuner's configs) lets it go, so a correct candidate's timing does not wait minutes
    for another task's timer; the warm-up's budget is set on its child, and lifted once warm."""
    import contextlib

    from geak_evaluator_triton.baseline_timer import LIFETIME_S, TimerFrames
    from geak_evaluator_triton.candidate_run import Gating
    from geak_evaluator_triton.devices import DeviceGate, Slot

    class Replier:
        def __init__(self):
            self.sent, self.limits = [], []

        def send(self, message):
            self.sent.append(message)

        def set_limit(self, seconds, note=""):
            self.limits.append(seconds)

        def judge_waiting(self):
            return contextlib.nullcontext()

    gate = DeviceGate(4)
    frames = TimerFrames(Gating(Slot(0, {}, "GPU 0", gate), shared_runs=True), warm_budget_s=150.0)
    replier = Replier()
    where = {"stage": "warm-up", "case": "*", "seed": 1}
    frames({"kind": "start", **where}, replier)
    assert frames.gating.holding == "shared" and replier.limits == [150.0]
    frames({"kind": "compiling", **where}, replier)
    assert frames.gating.holding is None
    assert gate.acquire_exclusive() < 1.0  # timing is not kept waiting by a compiling warm-up
    gate.release_exclusive()
    frames({"kind": "start", "resume": True, **where}, replier)
    assert frames.gating.holding == "shared" and replier.limits == [150.0]  # the budget runs on
    frames({"kind": "warmed", "estimates": {"c": 1.0}, "warm_s": 3.0}, replier)
    assert frames.gating.holding is None and frames.ready.is_set() and replier.limits[-1] == LIFETIME_S
    assert frames.inbox.empty()  # none of the warm-up's frames reached a session
