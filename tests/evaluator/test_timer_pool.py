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

    def __init__(self, key, children, task, runtime, slot, ref, warm_budget_s=0.0, timing_seed=None):
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

    events, budgets, produced = [], [], []
    ref = ReferenceRun(cases=[Case(name="n4096")], skipped=[], stage2_skipped=[], custom_compare=False,
                       seeds=[0, 1], outputs={}, timing_ready=False)

    class Timer:
        def wait_ready(self, timeout):
            events.append("wait_ready")
            return ""

        def release(self):
            events.append("release")

        def reference_outputs(self, seed, cases, timeout):
            events.append(("reference outputs", seed, tuple(cases)))
            return {("timing", c, seed): f"out {c}" for c in cases}, {}, ""

    timer = Timer()

    def start(key, task, runtime, slot, run, use=False, warm_budget_s=0.0, timing_seed=None):
        events.append(("timer", use))
        budgets.append(warm_budget_s)
        seeds.append(timing_seed)
        return timer

    def ensure_timing(task, runtime, slot, run, phases=None, producer=None):
        # the store asks the producer (the warming timer) first; a reference child only if it cannot
        produced.append(producer(7, ["n4096"], 100.0) if producer else None)
        events.append("reference timed runs")
        run.timing_ready = True

    judge = TritonEvaluator(judge_options())
    judge.timers = SimpleNamespace(start=start, close=lambda: None)
    seeds = []
    judge.references = SimpleNamespace(
        ensure_timing=ensure_timing, key=lambda task, runtime: "k", clear=lambda: None,
        planned_timing_seed=lambda run: 7,
        times=SimpleNamespace(store_timing=lambda key, seconds: events.append("stored")))
    try:
        got, why = judge._prepare_timing(mini_tasks["rowsum"], SimpleNamespace(), SimpleNamespace(), ref)
    finally:
        judge.timers = SimpleNamespace(close=lambda: None)
    assert (got, why) == (timer, "")
    # the timer is in use (the pool closes none in use) while it runs the reference's timed outputs
    assert events == [("timer", True), "wait_ready", ("reference outputs", 7, ("n4096",)), "reference timed runs",
                      "release", ("timer", True), "wait_ready", "stored"], events
    assert produced == [({("timing", "n4096", 7): "out n4096"}, {})]
    # the timer's warm-up has the reference's own budget (its time unknown here: the ceiling)
    assert budgets == [judge.options.reference_timeout_s] * 2
    # and it draws the timing seed's inputs up front too: the sessions time it on that seed
    assert seeds == [7, 7]


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


class _TimerChannel:
    """The timer child's end of its channel: keeps every frame sent, answers GO."""

    def __init__(self):
        self.sent = []

    def send(self, frame):
        self.sent.append(frame)

    def receive(self):
        return {"go": True}


class _DoublingHarness:
    def prefetch(self, case, seed):
        pass

    def make_inputs(self, case, seed, device):
        import torch

        if case.name == "bad":
            raise ValueError("no such size")
        return {"x": torch.full((3,), float(seed))}

    def allocate(self, case, inputs):
        return {}

    def run(self, module, case, inputs, outputs):
        outputs["y"] = inputs["x"] * 2


def test_the_timer_runs_the_references_timed_cases_as_a_reference_child_would():
    """``reference_outputs``: each timed case on the seed asked for, gated as a reference
    child's run (start, then ran once the outputs are on the host), a case that raises
    reported as an error of the timing stage, then done."""
    from types import SimpleNamespace

    from geak_core.api.tasks import Case
    from geak_evaluator_triton.baseline_timer import _reference_outputs

    channel = _TimerChannel()
    cases = {n: Case(name=n, params={}) for n in ("a", "bad", "b")}
    _reference_outputs(channel, SimpleNamespace(outliers=None), _DoublingHarness(), None, cases,
                       {"seed": 5, "cases": ["a", "bad", "b", "missing"]})
    kinds = [(f["kind"], f.get("case")) for f in channel.sent]
    assert kinds == [("start", "a"), ("ran", "a"), ("run", "a"), ("start", "bad"), ("error", "bad"),
                     ("start", "b"), ("ran", "b"), ("run", "b"), ("error", "missing"),
                     ("reference_outputs_done", None)]
    runs = [f for f in channel.sent if f["kind"] == "run"]
    assert all(f["stage"] == "timing" and f["seed"] == 5 for f in runs)
    assert runs[0]["outputs"]["y"].tolist() == [10.0, 10.0, 10.0]
    assert "no such size" in channel.sent[4]["message"]


def _timer_without_child(frames):
    import threading
    from types import SimpleNamespace

    from geak_evaluator_triton.baseline_timer import TimerChild

    timer = TimerChild.__new__(TimerChild)
    timer.lock, timer.frames, timer.exit, timer._closed = threading.Lock(), frames, "", False
    timer.task = SimpleNamespace(key="mini/add")
    stop = threading.Event()
    timer.thread = threading.Thread(target=stop.wait, daemon=True)
    timer.thread.start()
    return timer, stop


def test_the_judge_takes_the_timers_outputs_and_ends_a_timer_that_does_not_finish():
    import contextlib

    import torch
    from geak_evaluator_triton.baseline_timer import TimerFrames
    from geak_evaluator_triton.candidate_run import Gating
    from geak_evaluator_triton.devices import DeviceGate, Slot

    class Replier:
        def __init__(self, script):
            self.script, self.limits = script, []

        def send(self, message):
            if "reference_outputs" in message:
                for frame in self.script:
                    frames(frame, self)
            self.sent = message

        def set_limit(self, seconds, note=""):
            self.limits.append(seconds)

        def judge_waiting(self):
            return contextlib.nullcontext()

    gate = DeviceGate(4)
    frames = TimerFrames(Gating(Slot(0, {}, "GPU 0", gate), shared_runs=True))
    where = {"stage": "timing", "seed": 9}
    script = [{"kind": "start", "case": "a", **where}, {"kind": "ran", "case": "a", **where},
              {"kind": "run", "case": "a", "outputs": {"y": torch.ones(2)}, **where},
              {"kind": "start", "case": "b", **where},
              {"kind": "error", "case": "b", "exception": "ValueError", "message": "too big", **where},
              {"kind": "reference_outputs_done"}]
    frames.replier = Replier(script)
    timer, stop = _timer_without_child(frames)
    outputs, untimed, problem = timer.reference_outputs(9, ["a", "b"], 5.0)
    assert problem == "" and list(outputs) == [("timing", "a", 9)] and "too big" in untimed["b"]
    assert frames.gating.holding is None and gate.acquire_exclusive() < 1.0  # every run let the device go
    gate.release_exclusive()
    assert frames.replier.limits == []  # the warm-up's budget is not touched by these runs

    frames.replier = Replier([{"kind": "start", "case": "a", **where}])  # never done
    outputs, untimed, problem = timer.reference_outputs(9, ["a"], 0.5)
    assert "not done in 0 s" in problem or "not done in 1 s" in problem
    assert frames.replier.limits == [0.0] and not timer.alive  # ended, and out of the pool
    stop.set()


def test_the_store_takes_the_producers_timed_outputs_and_runs_a_child_only_when_it_cannot(mini_tasks, tmp_path):
    from types import SimpleNamespace

    from geak_core.api.tasks import Case
    from geak_evaluator_triton.reference_run import ReferenceRun
    from geak_evaluator_triton.reference_store import ReferenceStore
    from judge_support import judge_options

    children = SimpleNamespace(options=judge_options(), cache_dir=lambda name: str(tmp_path / name))
    store = ReferenceStore(children, secret_seeds=[11], timing_seed=1234)
    children = []  # the timing seeds reference children were run for
    store.run = lambda *a, **k: children.append(k["timing_seed"]) or SimpleNamespace(
        outputs={("timing", "n4096", k["timing_seed"]): "from a child"}, untimed={})
    task, runtime = mini_tasks["rowsum"], SimpleNamespace(mode="gpu", case_set="default", device_name="x")
    store.key = lambda task, runtime: "k"

    def fresh():
        return ReferenceRun(cases=[Case(name="n4096")], skipped=[], stage2_skipped=[], custom_compare=False,
                            seeds=[0, 1], outputs={}, timing_ready=False)

    asked = []
    run, phases = fresh(), {}
    store.ensure_timing(task, runtime, None, run, phases,
                        lambda seed, cases, budget: asked.append((seed, cases)) or (
                            {("timing", c, seed): "from the timer" for c in cases}, {}))
    seed = 1234
    assert asked == [(seed, ["n4096"])] and children == [] and run.timing_ready
    assert run.outputs == {("timing", "n4096", seed): "from the timer"} and phases["reference.timing_in_timer"] == 1
    run = fresh()
    store.ensure_timing(task, runtime, None, run, {}, lambda seed, cases, budget: None)
    assert children == [seed] and run.outputs == {("timing", "n4096", seed): "from a child"}
