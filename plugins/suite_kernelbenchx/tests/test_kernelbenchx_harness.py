"""The KernelBench-X harness in this process (the reference only: trusted code), the input
helpers' stand-in, the approximation contract and the quantization source check."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch
from geak_core.api.harness import apply_outliers
from geak_suite_kernelbenchx import data_utils, precision, quantcheck
from geak_suite_kernelbenchx.harness import (
    Harness,
    QuantizationHarness,
    input_helpers,
    split_stages,
)


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(harness, module, case, seed, stage2=False):
    inputs = harness.make_inputs(case, seed, "cpu")
    if stage2:
        spec = harness.task.outliers
        inputs["outlier_stage"] = apply_outliers(inputs["outlier_stage"], spec.fraction,
                                                 spec.scale, seed)
    outputs = harness.allocate(case, inputs)
    harness.run(module, case, inputs, outputs)
    return outputs["result"]


def test_stage_one_compares_fixed_and_standard_results_stage_two_the_outlier_ones(make_suite):
    task = make_suite().get("softsign")
    harness = Harness(task)
    [case] = harness.cases("small")
    assert case.outliers and not case.timed
    module = _module(task.reference, "kbx_reference_softsign")
    first = _run(harness, module, case, 0)
    second = _run(harness, module, case, 0, stage2=True)
    assert set(first) == {"test_case_1", "test_case_2", "test_random_standard"}
    assert set(second) == {"test_random_outlier"}
    x = torch.tensor([-2.0, 0.0, 3.0])
    assert torch.equal(first["test_case_1"], x / (1 + x.abs()))
    # the same seed draws the same inputs; another seed draws others
    assert torch.equal(_run(harness, module, case, 0)["test_random_standard"][0],
                       first["test_random_standard"][0])
    assert not torch.equal(_run(harness, module, case, 1)["test_random_standard"][0],
                           first["test_random_standard"][0])
    # outlier mode at probability 0.01 and scale 50 gives values far beyond standard normals'
    raw = second["test_random_outlier"][0]
    assert raw.abs().max() > first["test_random_standard"][0].abs().max()


def test_full_mode_times_the_performance_script_inputs(make_suite):
    task = make_suite().get("softsign")
    cases = Harness(task).cases("full")
    assert [c.name for c in cases] == ["test", "perf_0", "perf_1"]
    perf = cases[1]
    assert perf.timed and not perf.checked and not perf.outliers
    assert perf.bytes == 1024 * 4 * 2 and perf.flops == 1024 * 3 and perf.dtype == "float32"
    assert perf.params["inputs"] == {"shape": [1024], "dtype": "float32"}


def test_a_test_without_outlier_mode_has_one_stage(make_suite):
    task = make_suite().get("scaled_sum")
    harness = Harness(task)
    [case] = harness.cases("small")
    assert not case.outliers and "one stage" in case.note
    result = _run(harness, _module(task.reference, "kbx_reference_scaled_sum"), case, 3)
    assert set(result) == {"test_uniform", "test_ints"}
    assert result["test_uniform"].shape == (8, 8)


def test_split_stages_of_results_that_are_not_dicts():
    assert split_stages([1, 2], stage2=False) == [1, 2]
    assert split_stages([1, 2], stage2=True) == {}
    assert split_stages({"a_outlier": 1, "b": 2}, stage2=True) == {"a_outlier": 1}


def test_the_input_helpers_draw_as_the_benchmark_and_are_put_back():
    helpers = data_utils.module_for("cpu")
    torch.manual_seed(5)
    ours = helpers.rand_tensor((3, 4))
    torch.manual_seed(5)
    assert torch.equal(ours, torch.randn(3, 4))
    torch.manual_seed(5)
    uniform = helpers.rand_tensor((100,), mode="uniform", low=2.0, high=3.0)
    assert uniform.min() >= 2.0 and uniform.max() < 3.0
    torch.manual_seed(5)
    spiky = helpers.rand_tensor((10000,), mode="outlier", outlier_prob=0.01, outlier_scale=50.0)
    torch.manual_seed(5)
    plain = torch.randn(10000)
    changed = (spiky != plain).sum().item()
    assert 50 < changed < 200  # about 1 % of the elements replaced
    assert helpers.rand_int((5,), low=0, high=3).dtype == torch.int64
    assert helpers.rand_bool((5,)).dtype == torch.bool
    sentinel = object()
    sys.modules["data_utils"] = sentinel
    try:
        with input_helpers("cpu"):
            from data_utils import rand_tensor  # noqa: F401
            assert sys.modules["data_utils"] is not sentinel
        assert sys.modules["data_utils"] is sentinel
    finally:
        del sys.modules["data_utils"]


def test_the_approximation_contract_uses_three_metrics():
    ref = torch.linspace(-1, 1, 1000)
    close = ref + 0.001 * torch.sin(torch.arange(1000.0))
    assert precision.compare({"r": [ref]}, {"r": [close]}, {}) == ""
    found = precision.compare({"r": [ref]}, {"r": [ref * 0.5]}, {}, "result")
    assert "result.r[0]" in found and "relative L1" in found and "RMSE" in found
    assert "cosine" in precision.compare(ref, -ref, {"cosine_sim": 0.9, "l1_relative": 9,
                                                     "rmse": 9})
    assert "shape" in precision.compare(ref, ref[:10], {})
    assert "dtype" in precision.compare(ref, ref.double(), {})
    assert precision.compare(torch.zeros(3), torch.zeros(3), {}) == ""
    assert "keys" in precision.compare({"a": ref}, {"b": ref}, {})
    assert precision.compare(1.0, 1.0 + 1e-7, {}) == "" and precision.compare(2, 3, {})


QUANTIZING = '''
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
    qx = tl.extra.cuda.libdevice.rint(x / sx).to(tl.int8)
    qw = (w / sw + 0.5).to(tl.int8)
    acc = qx.to(tl.int32) * qw.to(tl.int32)
    tl.store(out_ptr + offs, acc.to(tl.float32) * sx * sw, mask=mask)

def mul_w8a8(input, weight):
    out = torch.empty_like(input)
    mul_kernel[(1,)](input, weight, out, input.numel(), BLOCK=triton.next_power_of_2(input.numel()))
    return out
'''


def test_the_quantization_check_accepts_scales_computed_in_a_kernel():
    assert quantcheck.check(QUANTIZING) == []


@pytest.mark.parametrize("code, expected", [
    (QUANTIZING.replace("def mul_w8a8(input, weight):",
                        "def mul_w8a8(input, weight):\n    q = torch.quantize_per_tensor(input, 0.1, 0, torch.qint8)"),
     "high-level quantization API"),
    (QUANTIZING.replace("def mul_w8a8(input, weight):",
                        "def mul_w8a8(input, weight):\n    s = input.abs().max() / 127"),
     "outside a Triton kernel"),
    (QUANTIZING.replace("def mul_w8a8(input, weight):",
                        "def mul_w8a8(input, weight):\n    s = torch.amax(input.abs(), dim=0)"),
     "outside a Triton kernel"),
    (QUANTIZING.replace("tl.max(tl.abs(x), axis=0)", "1.0").replace("tl.max(tl.abs(w), axis=0)", "1.0"),
     "no kernel derives a scale"),
    (QUANTIZING.replace("tl.extra.cuda.libdevice.rint(x / sx).to(tl.int8)", "x / sx")
     .replace("(w / sw + 0.5).to(tl.int8)", "w / sw").replace("qx.to(tl.int32) * qw.to(tl.int32)", "qx * qw"),
     "no kernel discretises"),
    ("import torch\n\ndef mul_w8a8(a, b):\n    return a * b\n", "no @triton.jit kernel"),
    ("def broken(:\n", "does not parse"),
])
def test_the_quantization_check_names_what_is_missing_or_forbidden(code, expected):
    problems = quantcheck.check(code)
    assert any(expected in p for p in problems), problems


def test_the_quantization_harness_checks_candidates_not_the_reference(make_suite, tmp_path):
    task = make_suite().get("mul_w8a8")
    harness = QuantizationHarness(task)
    [case] = harness.cases("small")
    reference = _module(task.reference, "kbx_reference_mul_w8a8")
    assert set(_run(harness, reference, case, 0)) == {"corner_zero", "random_standard"}
    candidate_path = tmp_path / "candidate.py"
    candidate_path.write_text("import torch\n\ndef mul_w8a8(input, weight):\n"
                              "    return input * weight\n")
    candidate = _module(candidate_path, "kbx_candidate_mul_w8a8")
    with pytest.raises(Exception, match="quantization check failed.*no @triton.jit kernel"):
        _run(harness, candidate, case, 0)
    unchecked = make_suite(quantization_check=False).get("mul_w8a8")
    assert set(_run(QuantizationHarness(unchecked), candidate, case, 0)) == {"corner_zero",
                                                                             "random_standard"}
    expected = {"x": torch.ones(4)}
    assert harness.compare(case, "result", expected, {"x": torch.ones(4) * 1.01}) == ""
    assert "RMSE" in harness.compare(case, "result", expected, {"x": torch.ones(4) * 2})
