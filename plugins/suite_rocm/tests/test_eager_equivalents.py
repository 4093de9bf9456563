"""The PyTorch eager equivalents of the tasks (``Harness.eager``): what they compute.

The judge times a task's eager equivalent against the baseline for a speedup against
PyTorch eager, and gives a case no eager latency when eager's outputs differ from the
reference's. Here, on the small cases: eager agrees with the oracle and with our
reference as the judge compares them (in this process; the reference is trusted code).
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import pytest
from geak_core.api.harness import Harness
from geak_core.api.tasks import DeviceInfo, unmet_requirement
from geak_evaluator_triton.run_compare import compare_outputs, overrides_for
from geak_suite_rocm.suite import RocmSuite
from test_references import _assert_close

TASKS = RocmSuite().tasks()
WITH_EAGER = [t for t in TASKS if t.eager]
# What PyTorch has no eager operator for: Philox bit streams, MX-scaled and routed matmuls,
# attention that also returns its softmax statistics, an index map (plugins/suite_rocm/README.md).
WITHOUT_EAGER = {"moe_gemm", "test_flashattention_fwd", "test_matmul_MXFP", "test_randn", "test_random_int",
                 "test_triton_swizzle2d"}
DEVICE = DeviceInfo.detect()


def _harness(task):
    module_name, cls = task.harness.split(":")
    return getattr(importlib.import_module(module_name), cls)(task)


def _reference(task):
    spec = importlib.util.spec_from_file_location(f"_eager_ref_{os.path.basename(task.reference)[:-3]}",
                                                  task.reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_task_declares_eager_exactly_when_its_harness_defines_it():
    for task in TASKS:
        defined = type(_harness(task)).eager is not Harness.eager
        assert (task.eager == "harness") == defined, task.id
    assert {t.id for t in TASKS if not t.eager} == WITHOUT_EAGER


@pytest.mark.parametrize("task", WITH_EAGER, ids=[t.id for t in WITH_EAGER])
def test_eager_agrees_with_the_oracle_and_the_reference_on_small_cases(task):
    unmet = [why for r in task.requires if (why := unmet_requirement(r, DEVICE))]
    if unmet:
        pytest.skip("; ".join(unmet))
    harness = _harness(task)
    reference = _reference(task)
    compared = 0
    for case in harness.cases("small"):
        if any(unmet_requirement(r, DEVICE) for r in case.requires):
            continue
        inputs = harness.make_inputs(case, seed=0, device="cpu")
        try:
            eager = harness.eager(case, inputs)
        except NotImplementedError:
            continue
        expected = harness.allocate(case, inputs)
        harness.run(reference, case, inputs, expected)
        assert set(eager) == set(expected), f"{case.name}: eager names {sorted(eager)}"
        for name, value in harness.oracle(case, inputs).items():
            _assert_close(f"{case.name}/{name}", value, eager[name], harness.oracle_tolerances(case))
        diffs = compare_outputs(expected, eager, overrides_for(task, case), None)
        assert not diffs, f"{case.name}: {diffs[0]['message']}"
        compared += 1
    assert compared, "no small case has an eager equivalent"


@pytest.mark.parametrize("task_id", ["test_chained_dot_fp8", "gemm"])
def test_cases_without_an_eager_operator_say_so(task_id):
    task = next(t for t in TASKS if t.id == task_id)
    harness = _harness(task)
    missing = []
    for case in harness.cases("small"):
        try:
            harness.eager(case, harness.make_inputs(case, seed=0, device="cpu"))
        except NotImplementedError:
            missing.append(case.name)
    assert missing and all(("fp8" in name or "int8" in name or "block" in name or "tensor" in name)
                           for name in missing), missing


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["softmax", "test_add_kernel"])
def test_the_judge_checks_eager_against_the_reference_in_its_children(task_id):
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    task = next(t for t in TASKS if t.id == task_id)
    evaluator = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", workers=1, timeout_s=300.0))
    try:
        report = evaluator.check_reference(task)
    finally:
        evaluator.close()
    assert report["problems"] == []  # the reference against its oracle, and eager against it
    assert report["checked"] > 0
    assert report["eager_checked"] == len([c for c in _harness(task).cases("small") if c.checked])
