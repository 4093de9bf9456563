"""A correct candidate draws its timed inputs while the judge readies the rest.

At ``checked`` the judge sends the child its ``prepare`` (the timing seed) before it waits
for the reference's timed runs and the baseline's timer, so that the child's host work
(drawing the timed inputs) overlaps them; if timing is then off after all, the child is told
to stop after its ``prepared``, and the timer is given back.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest


class FakeReplier:
    def __init__(self, log):
        self.log = log

    def send(self, message):
        self.log.append(("sent", message))

    @contextlib.contextmanager
    def judge_waiting(self):
        yield


def _frames(mini_tasks, log, *, prepared=(SimpleNamespace(), ""), seed=7, timing_seed=7):
    from geak_core.api.tasks import Case
    from geak_evaluator_triton.candidate_run import CandidateFrames, Gating
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.reference_run import ReferenceRun

    ref = ReferenceRun(cases=[Case(name="n4096")], skipped=[], stage2_skipped=[], custom_compare=False,
                       seeds=[0, 1], outputs={}, timing_ready=False)
    timer, why = prepared

    def prepare(run):
        log.append(("prepare_timing", None))
        run.timing_seed, run.timing_ready = timing_seed, True
        if timer is not None:
            timer.release = lambda: log.append(("timer released", None))
        return timer, why

    frames = CandidateFrames(mini_tasks["rowsum"], ref, {"stage1": [], "seeds": [0, 1]}, TritonEvaluatorOptions(),
                             Gating(SimpleNamespace(gate=None, label="gpu0"), shared_runs=False),
                             timing_wanted=True, run_child=None, prepare_timing=prepare,
                             timing_seed=lambda run: seed)
    frames.replier = FakeReplier(log)
    return frames


def _session(mini_tasks, log, options, replier_class):
    """Frames about to be timed (``_time``) under ``options``, the candidate's and the timer's
    repliers of ``replier_class`` (named ``candidate`` and ``timer``); (frames, the timer's)."""
    import queue
    import threading

    frames = _frames(mini_tasks, log)
    frames.options = options
    frames.ref.timing_seed = 7
    frames.replier = replier_class(log)
    frames.replier.name = "candidate"
    timer_replier = replier_class(log)
    timer_replier.name = "timer"
    inbox = queue.Queue()
    inbox.put({"kind": "session_ready"})
    frames.timer = SimpleNamespace(lock=threading.Lock(), close=lambda: None, release=lambda: None,
                                   frames=SimpleNamespace(replier=timer_replier, inbox=inbox, estimates={}))
    return frames, timer_replier


def test_the_prepare_goes_to_the_child_before_the_judge_waits_for_the_reference_and_timer(mini_tasks):
    log = []
    frames = _frames(mini_tasks, log)
    frames.on_checked({"kind": "checked"})
    assert log == [("sent", {"prepare": {"seed": 7}}), ("prepare_timing", None)], log
    assert frames.untimed == "" and frames.timer is not None


@pytest.mark.parametrize("case", ["not timed", "other seed"])
def test_when_timing_is_off_after_all_the_prepared_child_is_stopped_and_the_timer_given_back(mini_tasks, case):
    from geak_evaluator_triton.protocol import ABORT

    log = []
    if case == "not timed":
        frames = _frames(mini_tasks, log, prepared=(None, "the baseline's timer did not start"))
    else:
        frames = _frames(mini_tasks, log, timing_seed=8)
    frames.on_checked({"kind": "checked"})
    assert log[0] == ("sent", {"prepare": {"seed": 7}})
    assert log[-1] == ("sent", ABORT), log
    assert frames.untimed
    if case == "other seed":
        assert ("timer released", None) in log
    before = len(log)
    frames.on_prepared({"kind": "prepared", "prepare_s": 1.0})  # answered by the ABORT already sent
    assert len(log) == before and not frames.timing_granted


def test_both_sides_of_a_session_run_on_the_same_cpus_and_go_back_after(mini_tasks, monkeypatch):
    """The candidate's child and the baseline's timer are put on the same CPUs for the session
    (``timing_session.timing_cpus`` of the slot's device) but the one their calling threads
    are asked to take alone (``calling_cpu``, sent with every case), and back on every CPU
    after it, also when the session fails; ``pin_timing_cpus = false`` leaves them where they
    are and asks for no CPU."""
    import os

    from geak_evaluator_triton import timing_session
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    class PinningReplier(FakeReplier):
        def pin_child(self, cpus):
            self.log.append(("pin", self.name, None if cpus is None else sorted(cpus)))
            return 2

    env = {"CUDA_VISIBLE_DEVICES": "1", "OMP_NUM_THREADS": "1"}
    for pin, fails in ((True, False), (True, True), (False, False)):
        log = []
        frames, _ = _session(mini_tasks, log, TritonEvaluatorOptions(pin_timing_cpus=pin), PinningReplier)
        frames.gating.slot.env = env

        def session(ref, options, loop, baseline, candidate, *args, fails=fails, log=log):
            log.append(("session", None, None))
            log.append(("asked", baseline.cpu, candidate.cpu))
            if fails:
                raise RuntimeError("lost")
            return [], ""

        monkeypatch.setattr(timing_session, "run_session", session)
        frames._time()
        pins = [entry for entry in log if entry[0] in ("pin", "session", "asked")]
        if not pin or not hasattr(os, "sched_setaffinity"):
            assert pins == [("session", None, None), ("asked", None, None)]
            continue
        cpus = timing_session.timing_cpus(env)
        cpu = timing_session.calling_cpu(cpus)
        assert cpu == min(cpus) and len(cpus) >= 2  # at least two: the calling thread's and the rest
        rest = sorted(cpus - {cpu})
        assert pins == [("pin", "timer", rest), ("pin", "candidate", rest), ("session", None, None),
                        ("asked", cpu, cpu), ("pin", "timer", None), ("pin", "candidate", None)], pins
        assert frames.phases["timing.pinned_threads"] == 4.0
        assert ("lost" in frames.untimed) == fails


@pytest.mark.parametrize("pause_baseline", [False, True])
def test_the_baselines_timer_is_stopped_with_the_candidate_running_only_under_pause_baseline(
        mini_tasks, monkeypatch, pause_baseline):
    """The session's baseline side is stoppable under ``pause_baseline`` (else never); the
    candidate's always. A stoppable side's pause stops its child's process group, and the
    time stopped is not charged to its timeout."""

    from geak_evaluator_triton import timing_session
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    class StoppingReplier(FakeReplier):
        def pause_child(self):
            self.log.append(("stopped", self.name))

        def resume_child(self):
            self.log.append(("resumed", self.name))

        def exclude(self, seconds):
            self.log.append(("not charged", self.name, seconds >= 0.0))

    log = []
    options = TritonEvaluatorOptions(pin_timing_cpus=False, pause_baseline=pause_baseline)
    frames, _ = _session(mini_tasks, log, options, StoppingReplier)

    def session(ref, options, loop, baseline, candidate, *args):
        log.append(("stoppable", baseline.stoppable, candidate.stoppable))
        for side in (baseline, candidate):
            side.pause()
            side.resume()
        return [], ""

    monkeypatch.setattr(timing_session, "run_session", session)
    frames._time()
    assert ("stoppable", pause_baseline, True) in log
    stops = [entry for entry in log if entry[0] in ("stopped", "resumed")]
    expected = [("stopped", "candidate"), ("resumed", "candidate")]
    if pause_baseline:
        expected = [("stopped", "timer"), ("resumed", "timer")] + expected
    assert stops == expected, stops
    charged = [entry for entry in log if entry[0] == "not charged"]
    assert charged == [("not charged", "timer", True)] * pause_baseline + [("not charged", "candidate", True)]
    assert frames.untimed == ""


def test_the_calling_cpu_is_the_sessions_first_and_none_without_a_rest():
    from geak_evaluator_triton.timing_session import calling_cpu

    assert calling_cpu({9, 4, 7}) == 4
    assert calling_cpu({3}) is None and calling_cpu(set()) is None


def test_a_case_asked_with_a_cpu_is_timed_from_a_thread_alone_on_it_and_the_frame_says_so():
    """The child side (``timed_calls.serve``): a ``case`` command with ``cpu`` runs the case's
    first call on the session's other CPUs, so that a thread pool it starts lands there, then
    puts the calling thread alone on that CPU for the warm-up and the blocks (``settle``);
    a thread started after that would share the CPU and case_ready counts it (``beside``).
    Without ``cpu``, nothing moves. ``RemoteSide`` sends ``cpu`` only when the judge set one."""
    import os
    import queue
    import threading

    from geak_evaluator_triton.timed_calls import serve
    from geak_evaluator_triton.timing_session import RemoteSide

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    target = max(os.sched_getaffinity(0))
    everywhere = os.sched_getaffinity(0)
    spread = (everywhere - {target}) or everywhere
    stop = threading.Event()

    class Side:
        seen = []

        def start_case(self, task, case, seed, warmup_ms, settle=None):
            pool = threading.Thread(target=stop.wait)  # as a first call's thread pool starts
            pool.start()
            self.seen.append(("first call", os.sched_getaffinity(0), os.sched_getaffinity(pool.native_id)))
            if settle is not None:
                settle()
                late = threading.Thread(target=stop.wait)  # started once the thread is pinned
                late.start()
                self.seen.append(("warm-up", os.sched_getaffinity(0), os.sched_getaffinity(late.native_id)))
            return {"launch_us": 1.0, "estimate_ms": 1.0, "call_ms": 1.0}

    class Channel:
        def __init__(self, commands):
            self.commands, self.sent = list(commands), []

        def receive(self):
            return self.commands.pop(0)

        def send(self, frame):
            self.sent.append(frame)

    results = {}

    def run(name, commands):
        channel = Channel(commands)
        results[name] = (serve(channel, Side(), None, {"c": object()}), channel.sent, os.sched_getaffinity(0))

    try:
        for name, ask in (("pinned", {"cpu": target}), ("free", {})):
            case = {"case": {"name": "c", "seed": 1, "warmup_ms": 0.0, **ask}}
            commands = [case, case, {"done": True}]  # a second case starts from the pinned thread
            thread = threading.Thread(target=run, args=(name, commands))  # its own affinity, not the test's
            thread.start()
            thread.join()
    finally:
        stop.set()
    pinned_case = [("first call", spread, spread), ("warm-up", {target}, {target})]
    assert Side.seen == pinned_case + pinned_case + [("first call", everywhere, everywhere)] * 2
    ended, sent, after = results["pinned"]
    assert ended == {"done": True} and [f["kind"] for f in sent] == ["case_ready"] * 2
    assert all(f["calling_cpu"] == target for f in sent)
    if os.path.isdir("/proc/self/task"):  # the thread started after the pin, counted
        assert sent[0]["beside"] == 1 and sent[1]["beside"] == 2
    assert after == {target}  # until the judge puts the group back (pin_child(None))
    assert all(f["calling_cpu"] is None and f["beside"] is None for f in results["free"][1])
    assert os.sched_getaffinity(0) == everywhere  # the test's own thread never moved

    for cpu in (None, 3):
        log, inbox = [], queue.Queue()
        inbox.put({"kind": "case_ready", "launch_us": 1.0})
        side = RemoteSide(FakeReplier(log), inbox, False, "the baseline's timer")
        side.cpu = cpu
        side.start_case("c", 5, 1.0)
        (_, sent), = log
        assert sent["case"].get("cpu") == cpu and ("cpu" in sent["case"]) == (cpu is not None)


def test_timing_cpus_is_a_childs_share_offset_by_the_device():
    from geak_evaluator_triton.timing_session import timing_cpus

    cpus = set(range(32))
    assert timing_cpus({"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "4"}, cpus) == {0, 1, 2, 3}
    assert timing_cpus({"CUDA_VISIBLE_DEVICES": "1", "OMP_NUM_THREADS": "4"}, cpus) == {4, 5, 6, 7}
    assert timing_cpus({"HIP_VISIBLE_DEVICES": "7", "OMP_NUM_THREADS": "1"}, cpus) == {14, 15}  # at least 2
    assert timing_cpus({"CUDA_VISIBLE_DEVICES": "9", "OMP_NUM_THREADS": "8"}, cpus) == {8, 9, 10, 11, 12, 13, 14, 15}
    assert timing_cpus({"CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "4"}, {5, 6}) == {5, 6}  # all there is
    assert timing_cpus({}, cpus) == {0, 1}
