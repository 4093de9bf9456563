"""Speedup against PyTorch eager: the judge's side of it.

The measurement itself needs a GPU (tests/evaluator/test_gpu.py); here: how eager
latencies become a verdict's figures, a reference that is eager itself, and the eager
equivalent checked against the reference in a child under the interpreter.
"""

from __future__ import annotations

import dataclasses

import pytest
from geak_core.api.model import EvalResult, ShapeResult
from geak_evaluator_triton.eager import NO_EQUIVALENT, EagerCase, EagerTimes, apply_eager


def _timed(method: str = "sum") -> EvalResult:
    shapes = [ShapeResult("small", reference_ms=1.0, candidate_ms=0.5),
              ShapeResult("large", reference_ms=4.0, candidate_ms=4.0),
              ShapeResult("fp8", reference_ms=2.0, candidate_ms=1.0)]
    return EvalResult("t", "c", call_ok=True, correct=True, shapes=shapes, speedup_method=method,
                      performance_measured=True, performance_note="CUDA-event medians")


def test_each_shape_gets_the_reference_latency_scaled_by_the_eager_ratio():
    result = _timed()
    times = EagerTimes({"small": EagerCase(eager_ms=0.3, baseline_ms=0.1),
                        "large": EagerCase(eager_ms=1.0, baseline_ms=2.0)})
    apply_eager(result, times)
    small, large, _ = result.shapes
    assert small.eager_ms == pytest.approx(3.0) and small.speedup_vs_eager == pytest.approx(6.0)
    assert large.eager_ms == pytest.approx(2.0) and large.speedup_vs_eager == pytest.approx(0.5)
    assert small.to_dict()["speedup_vs_eager"] == pytest.approx(6.0)


def test_the_verdict_aggregates_over_the_shapes_with_an_eager_latency_and_names_the_others():
    times = EagerTimes({"small": EagerCase(0.3, 0.1), "large": EagerCase(1.0, 2.0),
                        "fp8": EagerCase(problem=NO_EQUIVALENT)})
    for method, expected in (("sum", (3.0 + 2.0) / (0.5 + 4.0)), ("geomean", (6.0 * 0.5) ** 0.5),
                             ("mean_ratio", (6.0 + 0.5) / 2)):
        result = _timed(method)
        apply_eager(result, times)
        assert result.speedup_vs_eager == pytest.approx(expected), method
        assert result.shapes[2].eager_ms is None
        assert result.performance_note == (f"CUDA-event medians; no PyTorch eager latency for fp8 "
                                           f"({NO_EQUIVALENT})")


def test_an_eager_equivalent_that_disagrees_or_failed_gives_no_speedup_against_eager():
    result = _timed()
    apply_eager(result, EagerTimes({"small": EagerCase(0.3, 0.1, problem="eager's outputs differ")}))
    assert result.speedup_vs_eager is None
    assert "small (eager's outputs differ)" in result.performance_note
    assert "large (not measured)" in result.performance_note
    failed = _timed()
    apply_eager(failed, EagerTimes(problem="the eager child failed: RuntimeError: boom"))
    assert failed.speedup_vs_eager is None and all(s.eager_ms is None for s in failed.shapes)
    assert failed.performance_note.count("the eager child failed") == 3


def test_a_reference_that_is_pytorch_eager_is_the_eager_latency_itself(judge, mini_tasks):
    task = dataclasses.replace(mini_tasks["scale"], eager="reference")
    result = _timed("geomean")
    judge.eager.apply(task, None, None, None, None, result)
    assert [s.eager_ms for s in result.shapes] == [1.0, 4.0, 2.0]
    assert result.speedup_vs_eager == pytest.approx((2.0 * 1.0 * 2.0) ** (1 / 3))


def test_an_unknown_eager_source_is_said_in_the_note(judge, mini_tasks):
    result = _timed()
    judge.eager.apply(dataclasses.replace(mini_tasks["add"], eager="numpy"), None, None, None, None, result)
    assert result.speedup_vs_eager is None
    assert "unknown Task.eager 'numpy'" in result.performance_note


@pytest.mark.slow
def test_check_reference_compares_the_eager_equivalent_with_the_reference(judge, mini_tasks):
    report = judge.check_reference(mini_tasks["add"])
    assert report["problems"] == []
    assert report["eager_checked"] == 2  # both small cases, in a child under the interpreter


@pytest.mark.slow
def test_an_eager_equivalent_that_computes_something_else_is_reported(judge, mini_tasks):
    task = dataclasses.replace(mini_tasks["add"], harness="minisuite.harnesses:MiscountedEagerAddHarness")
    report = judge.check_reference(task)
    assert report["eager_checked"] == 1  # the float16 case has no eager equivalent
    (problem,) = report["problems"]
    assert problem.startswith("eager equivalent, case 'n100_float32': eager's outputs differ")


def test_a_task_without_eager_is_not_checked_for_one(judge, mini_tasks):
    assert judge.eager.check(mini_tasks["rowsum"], None, None, None) == (0, [])


def test_eager_beside_a_running_reference_starts_at_once_and_is_checked_against_the_finished_run():
    """With the reference still running (its case table in), eager's child starts and times
    at once; its timed outputs are compared once the reference is done."""
    import threading

    import torch
    from geak_core.api.tasks import Case, Task
    from geak_core.kit.sandbox import SandboxResult
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.devices import DeviceGate, Runtime, Slot
    from geak_evaluator_triton.eager import EagerStore
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.reference_run import ReferenceRun
    from geak_evaluator_triton.reference_store import PendingReference, ReferenceStore

    options = TritonEvaluatorOptions(mode="gpu", spare_children="off")
    children = Children(options)
    store = EagerStore(children, ReferenceStore(children, [11], 99))
    task = Task(suite="mini", id="scale", instruction="", entry_points=[], harness="", eager="harness")
    cases = [Case(name="big", params={}, timed=True), Case(name="small", params={}, timed=True)]
    provisional = ReferenceRun(cases=cases, skipped=[], stage2_skipped=[], custom_compare=False, seeds=[1],
                               outputs={}, timing_seed=99)
    pending = PendingReference()
    pending.table(provisional)
    started = threading.Event()

    def eager_child(entry, args, env, *, timeout, cache, on_message, slot=None):
        assert not pending.done  # the reference still runs
        assert args["timing"]["cases"] == ["big", "small"]
        started.set()
        for name, value in (("big", 2.0), ("small", 5.0)):
            on_message({"kind": "timing", "case": name, "seed": 99, "candidate_ms": 2.0, "reference_ms": 1.0},
                       None)
            on_message({"kind": "timing_outputs", "case": name, "seed": 99,
                        "outputs": {"y": torch.full((3,), value)}}, None)
        return SandboxResult(returncode=0, messages=[{"$return": {}}])

    children.run = eager_child
    runtime = Runtime("gpu", "small", "Test GPU", "nvidia", [], {"torch": "t", "triton": "x"})
    slot = Slot(0, {}, "GPU 0", DeviceGate(2))
    store.prefetch(task, runtime, slot, provisional, None, pending=pending)
    assert started.wait(10)  # before the reference has finished
    # The finished run: "small"'s timed output differs from what eager produced.
    provisional.outputs[("timing", "big", 99)] = {"y": torch.full((3,), 2.0)}
    provisional.outputs[("timing", "small", 99)] = {"y": torch.full((3,), 6.0)}
    pending.finish(provisional)
    times = store.get(task, runtime, slot, provisional, None)  # waits for the prefetch
    assert times.cases["big"].ratio == 2.0
    assert times.cases["small"].ratio is None and "differ" in times.cases["small"].problem
