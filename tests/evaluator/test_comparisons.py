"""A candidate's runs are compared in a thread of the judge's own, in order, while the
child goes on: the frame reader answers the child's next device request at once, even
while a comparison waits for a reference output that has not come yet; the outputs
waiting for comparison are bounded; a comparison's failure stops the child at its next
request and reaches the verdict."""

from __future__ import annotations

import contextlib
import threading
import time

import torch
from geak_core.api.tasks import Case


class Replier:
    def __init__(self) -> None:
        self.sent: list = []
        self.excluded_s = 0.0

    def send(self, message) -> None:
        self.sent.append(message)

    @contextlib.contextmanager
    def judge_waiting(self):
        began = time.monotonic()
        try:
            yield
        finally:
            self.excluded_s += time.monotonic() - began


class Task:
    key = "mini/copy"
    id = "copy"
    tolerances: dict = {}

    def tolerance_overrides(self, case):  # pragma: no cover - not every harness has one
        return {}


def _frames(live=None, outputs=None, options=None):
    from geak_evaluator_triton.candidate_run import CandidateFrames, Gating, correctness_plan
    from geak_evaluator_triton.devices import DeviceGate, Slot
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.reference_run import ReferenceRun

    options = options or TritonEvaluatorOptions(check_outliers=False, check_determinism=False, noise_multiple=0.0)
    cases = [Case(name=f"c{i}", params={}) for i in range(3)]
    ref = ReferenceRun(cases=cases, skipped=[], stage2_skipped=[], custom_compare=False, seeds=[7],
                       outputs=outputs if outputs is not None else {}, timing_seed=None)
    plan = correctness_plan(ref, options, gate=True)
    gating = Gating(Slot(0, {}, "GPU 0", DeviceGate(2)), shared_runs=True)
    return CandidateFrames(Task(), ref, plan, options, gating, timing_wanted=False, run_child=None, live=live), ref


def _beside_a_running_reference():
    """Frames of a child whose reference still runs (its case table in), past the import."""
    from geak_evaluator_triton.reference_store import PendingReference

    pending = PendingReference()
    frames, provisional = _frames(live=pending)
    pending.table(provisional)
    replier = Replier()
    frames({"kind": "imported", "import_s": 0.1}, replier)
    return frames, provisional, pending, replier


def _run(frames, replier, name, value):
    frames({"kind": "start", "stage": "stage1", "case": name, "seed": 7}, replier)
    frames({"kind": "ran", "stage": "stage1", "case": name, "seed": 7}, replier)
    return frames({"kind": "run", "stage": "stage1", "case": name, "seed": 7, "run_s": 0.01,
                   "outputs": {"y": torch.full((4,), float(value))}, "checks": {"launches": {"candidate": 1}}},
                  replier)


def test_the_child_goes_on_while_its_runs_wait_for_the_reference_beside_it():
    from geak_evaluator_triton.protocol import GO

    frames, provisional, pending, replier = _beside_a_running_reference()
    began = time.monotonic()
    for i, name in enumerate(["c0", "c1", "c2"]):
        digest = _run(frames, replier, name, i)
        assert "outputs" not in digest
    # No reference output has come: every run was still handed over at once, and every
    # device request answered.
    assert time.monotonic() - began < 2.0
    assert replier.sent[1:] == [GO, GO, GO]
    assert all("compared" not in run for run in frames.runs)

    def reference_arrives():
        time.sleep(0.3)
        for i, name in enumerate(["c0", "c1", "c2"]):
            provisional.outputs[("stage1", name, 7)] = {"y": torch.full((4,), float(i if name != "c1" else 9))}
            pending.arrived()
        pending.finish(provisional)

    threading.Thread(target=reference_arrives).start()
    frames({"kind": "checked", "sent_s": 0.0, "waited_s": 0.0}, replier)
    # "checked" waits for the reference and the last comparison, then judges: c1 differs.
    assert all("compared" in run for run in frames.runs)
    assert frames.verdict.failures and "c1" in frames.verdict.failures[0].reason
    assert frames.reference_wait_s >= 0.2  # the child waited for the reference at "checked"


def test_outputs_waiting_for_comparison_are_bounded():
    from geak_evaluator_triton.candidate_run import Comparisons

    release = threading.Event()
    compared: list[int] = []

    def compare(frame, digest):
        release.wait(5)
        compared.append(frame["n"])
        digest["compared"] = True

    comparisons = Comparisons(compare, limit=100)
    big = {"outputs": torch.zeros(20, dtype=torch.float32)}  # 80 bytes
    assert comparisons.put({**big, "n": 0}, {}) < 0.5  # the first run always has room
    waited: list[float] = []
    thread = threading.Thread(target=lambda: waited.append(comparisons.put({**big, "n": 1}, {})))
    thread.start()
    thread.join(0.3)
    assert thread.is_alive()  # 160 bytes would be over the limit: the reader waits
    release.set()
    thread.join(5)
    assert waited and waited[0] >= 0.25
    assert comparisons.drain() < 5 and compared == [0, 1]
    comparisons.close()


def test_a_comparison_that_fails_stops_the_child_at_its_next_request():
    from geak_evaluator_triton.protocol import ABORT
    from geak_evaluator_triton.run_compare import JudgeError

    frames, _, pending, replier = _beside_a_running_reference()
    _run(frames, replier, "c0", 0)
    pending.finish(error=JudgeError("the reference of mini/copy failed: boom"))
    frames.comparisons.drain()
    frames({"kind": "start", "stage": "stage1", "case": "c1", "seed": 7}, replier)
    assert replier.sent[-1] == ABORT
    assert "boom" in str(frames.judge_error)


def test_comparisons_end_their_thread_when_closed():
    from geak_evaluator_triton.candidate_run import Comparisons

    comparisons = Comparisons(lambda frame, digest: digest.update(compared=True))
    digest: dict = {}
    comparisons.put({"outputs": None}, digest)
    comparisons.drain()
    assert digest == {"compared": True}
    thread = comparisons._thread
    comparisons.close()
    assert thread is not None
    thread.join(2)
    assert not thread.is_alive()


class _Channel:
    def __init__(self, answers):
        self.sent: list = []
        self.answers = list(answers)

    def send(self, frame) -> None:
        self.sent.append(frame)

    def receive(self):
        return self.answers.pop(0)


def test_a_gated_run_lets_the_device_go_while_triton_compiles():
    """The child's compile hooks: ``compiling`` before a compile, ``start`` (resume) and a
    wait for GO after it; outside a gated run, nothing; an ABORT stops the run."""
    import pytest
    from geak_evaluator_triton.child_jobs import CompileRelease, GateAborted

    release = CompileRelease()
    channel = _Channel([{"go": True}, {"abort": True}])
    where = {"stage": "stage1", "case": "c0", "seed": 7}
    release.before_compile(key=1)
    release.after_compile(key=1)
    assert channel.sent == []  # not in a run: Triton compiles as it would anyway
    with release.during(channel, where):
        assert release.before_compile(key=1) is False  # never skips the compile
        release.before_compile(key=2)  # a nested compile while one is under way: one frame
        release.after_compile(key=2)
        assert channel.sent == [{"kind": "compiling", **where}, {"kind": "start", **where, "resume": True}]
        release.before_compile(key=3)
        with pytest.raises(GateAborted):
            release.after_compile(key=3)
    assert release.channel is None and not release.compiling


def test_the_judge_frees_the_device_while_a_candidate_compiles():
    frames, _ = _frames()
    replier = Replier()
    frames({"kind": "imported", "import_s": 0.1}, replier)
    frames({"kind": "start", "stage": "stage1", "case": "c0", "seed": 7}, replier)
    assert frames.gating.holding == "capped"
    frames({"kind": "compiling", "stage": "stage1", "case": "c0", "seed": 7}, replier)
    assert frames.gating.holding is None
    frames({"kind": "start", "stage": "stage1", "case": "c0", "seed": 7, "resume": True}, replier)
    assert frames.gating.holding == "capped" and replier.sent[-1] == {"go": True}
