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
