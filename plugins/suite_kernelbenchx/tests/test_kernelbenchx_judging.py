"""KernelBench-X tasks through the real judge, under the interpreter, in child processes."""

from __future__ import annotations

import pytest

pytest.importorskip("geak_evaluator_triton.evaluator")

from geak_core.api.model import Candidate  # noqa: E402
from geak_evaluator_triton.evaluator import TritonEvaluator  # noqa: E402
from geak_evaluator_triton.options import TritonEvaluatorOptions  # noqa: E402

pytestmark = pytest.mark.slow

SOFTSIGN = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softsign_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x / (1.0 + tl.abs(x)), mask=mask)


def softsign(input):
    out = torch.empty_like(input)
    n = input.numel()
    softsign_kernel[(triton.cdiv(n, 256),)](input, out, n, BLOCK=256)
    return out
'''

MUL_W8A8 = '''
import torch
import triton
import triton.language as tl


@triton.jit
def mul_kernel(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    sx = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-8) / 127.0
    sw = tl.maximum(tl.max(tl.abs(w), axis=0), 1e-8) / 127.0
    vx = x / sx
    vw = w / sw
    qx = tl.where(vx >= 0, vx + 0.5, vx - 0.5).to(tl.int8)
    qw = tl.where(vw >= 0, vw + 0.5, vw - 0.5).to(tl.int8)
    acc = qx.to(tl.int32) * qw.to(tl.int32)
    tl.store(out_ptr + offs, acc.to(tl.float32) * (sx * sw), mask=mask)


def mul_w8a8(input, weight):
    out = torch.empty_like(input)
    n = input.numel()
    mul_kernel[(1,)](input, weight, out, n, BLOCK=triton.next_power_of_2(n))
    return out
'''


@pytest.fixture(scope="module")
def judge():
    evaluator = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", workers=1))
    yield evaluator
    evaluator.close()


def _judge(judge, task, code):
    return judge.evaluate(task, Candidate(id="c", task_id=task.id, code=code))


def test_a_triton_candidate_passes_both_stages(make_suite, judge):
    result = _judge(judge, make_suite().get("softsign"), SOFTSIGN)
    assert (result.call_ok, result.correct, result.reason) == (True, True, None)
    assert not any("stage" in str(s) for s in result.skipped)


def test_a_candidate_wrong_only_on_outliers_fails_stage_two(make_suite, judge):
    clamped = SOFTSIGN.replace("x = tl.load(x_ptr + offs, mask=mask, other=0.0)",
                               "x = tl.minimum(tl.maximum(tl.load(x_ptr + offs, mask=mask, "
                               "other=0.0), -8.0), 8.0)")
    result = _judge(judge, make_suite().get("softsign"), clamped)
    assert result.call_ok and not result.correct
    assert result.failed_stage == "stage2", result.reason
    assert "test_random_outlier" in str(result.mismatches)


def test_a_wrong_candidate_fails_stage_one(make_suite, judge):
    wrong = SOFTSIGN.replace("x / (1.0 + tl.abs(x))", "x / (1.0 + x * x)")
    result = _judge(judge, make_suite().get("softsign"), wrong)
    assert result.failed_stage == "stage1" and not result.correct


def test_computing_with_torch_in_the_wrapper_is_rejected(make_suite, judge):
    cheat = SOFTSIGN.replace("    return out\n", "    return input / (1 + input.abs())\n")
    result = _judge(judge, make_suite().get("softsign"), cheat)
    assert not result.correct and result.failed_stage == "anticheat"


def test_a_quantizing_kernel_meets_the_approximation_contract(make_suite, judge):
    result = _judge(judge, make_suite().get("mul_w8a8"), MUL_W8A8)
    assert (result.call_ok, result.correct, result.reason) == (True, True, None)


def test_a_kernel_that_does_not_quantize_fails_the_contract_or_the_check(make_suite, judge):
    task = make_suite().get("mul_w8a8")
    plain = MUL_W8A8.replace("acc.to(tl.float32) * (sx * sw)", "x * w")
    result = _judge(judge, task, plain)  # its code still shows the quantization: numbers decide
    assert result.correct, result.reason
    halved = MUL_W8A8.replace("acc.to(tl.float32) * (sx * sw)", "acc.to(tl.float32) * sx")
    result = _judge(judge, task, halved)
    assert result.failed_stage == "stage1" and not result.correct
    skipped = MUL_W8A8.replace("qx = tl.where(vx >= 0, vx + 0.5, vx - 0.5).to(tl.int8)",
                               "qx = vx").replace(
        "qw = tl.where(vw >= 0, vw + 0.5, vw - 0.5).to(tl.int8)", "qw = vw").replace(
        "acc = qx.to(tl.int32) * qw.to(tl.int32)", "acc = qx * qw")
    result = _judge(judge, task, skipped)
    assert not result.call_ok and "quantization check failed" in (result.reason or "")
    assert "discretises" in result.reason
