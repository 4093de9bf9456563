"""Output comparison in the judge: tolerances, NaN/Inf positions, structure, readable reports."""

from __future__ import annotations

import math

import numpy as np
import torch
from geak_core.api.tasks import tolerance_for
from geak_evaluator_triton.value_compare import compare_values


def test_values_within_the_dtype_tolerance_are_equal():
    expected = torch.tensor([1.0, 2.0, 3.0])
    assert compare_values(expected, expected + 5e-6) == []
    assert compare_values(expected.half(), (expected + 1e-3).half()) == []


def test_values_beyond_tolerance_are_reported_with_indices_values_and_errors():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 0.5
    (mismatch,) = compare_values(expected, actual, path="out")
    assert mismatch["count"] == 1 and mismatch["total"] == 6
    assert mismatch["first"] == [{"index": [1, 2], "expected": 0.0, "actual": 0.5}]
    assert mismatch["max_abs_error"] == 0.5
    assert mismatch["message"].startswith("out: 1 of 6 elements differ beyond atol=1e-05, rtol=1e-05")


def test_task_overrides_change_the_tolerance_of_one_dtype():
    expected, actual = torch.tensor([1.0]), torch.tensor([1.01])
    assert compare_values(expected, actual)
    assert compare_values(expected, actual, {"float32": [0.02, 0.0]}) == []
    assert compare_values(expected, actual, {"*": [0.02, 0.0]}) == []


def test_nan_and_inf_must_sit_at_the_same_positions_with_the_same_sign():
    expected = torch.tensor([math.nan, math.inf, 1.0])
    assert compare_values(expected, expected.clone()) == []
    assert compare_values(expected, torch.tensor([0.0, math.inf, 1.0]))
    assert compare_values(expected, torch.tensor([math.nan, -math.inf, 1.0]))
    assert compare_values(expected, torch.tensor([math.nan, math.inf, math.nan]))


def test_integers_and_booleans_compare_exactly():
    assert compare_values(torch.tensor([1, 2]), torch.tensor([1, 3]))[0]["message"].endswith(
        "(exact comparison); first at (1,): expected 2, got 3")
    assert compare_values(torch.tensor([True]), torch.tensor([False]))


def test_shape_and_dtype_differences_are_named():
    assert "expected shape (3,), got (4,)" in compare_values(torch.ones(3), torch.ones(4))[0]["message"]
    assert "expected dtype float32, got float16" in compare_values(
        torch.ones(3), torch.ones(3).half())[0]["message"]


def test_nested_structures_compare_by_keys_lengths_and_items():
    expected = {"a": [torch.ones(2), 3], "b": (1.0, "x")}
    assert compare_values(expected, {"a": [torch.ones(2), 3], "b": [1.0, "x"]}) == []
    assert "missing keys ['b']" in compare_values(expected, {"a": [torch.ones(2), 3]})[0]["message"]
    assert "expected 2 items, got 1" in compare_values(expected, {"a": [torch.ones(2)], "b": (1.0, "x")})[0]["message"]
    assert compare_values(expected, {"a": [torch.ones(2), 4], "b": (1.0, "x")})[0]["path"] == "output['a'][1]"
    assert "expected tensor" in compare_values(expected, {"a": [5, 3], "b": (1.0, "x")})[0]["message"]


def test_python_floats_use_their_own_tolerance_key():
    assert compare_values(1.0, 1.000001) == []
    assert compare_values(1.0, 1.1)
    assert compare_values(1.0, 1.1, {"python_float": [0.2, 0.0]}) == []
    assert compare_values(math.nan, math.nan) == []


def test_fp8_and_bf16_outputs_are_compared_in_float32():
    expected = torch.tensor([1.0, 2.0]).to(torch.float8_e4m3fn)
    assert compare_values(expected, expected.clone()) == []
    assert compare_values(torch.tensor([1.0]).bfloat16(), torch.tensor([1.5]).bfloat16())


def test_numpy_arrays_compare_like_tensors():
    assert compare_values(np.ones(3, np.float32), np.ones(3, np.float32)) == []
    assert compare_values(np.ones(3, np.float32), np.zeros(3, np.float32))[0]["count"] == 3


def test_failures_are_described_by_kind():
    from geak_evaluator_triton.verdict import describe_exception, trim_traceback

    assert describe_exception({"exception": "OutOfMemoryError", "message": "CUDA out of memory. Tried"}) \
        .startswith("ran out of GPU memory")
    assert describe_exception({"exception": "RuntimeError",
                               "message": "CUDA error: an illegal memory access was encountered"}) \
        .startswith("GPU error")
    assert describe_exception({"exception": "CompilationError", "message": "at 3:4: bad"}) \
        .startswith("the kernel failed to compile")
    assert describe_exception({"exception": "ValueError", "message": "x\ny"}) == "ValueError: x"
    long = "\n".join(f"line {i}" for i in range(200))
    trimmed = trim_traceback(long)
    assert trimmed.startswith("[... earlier frames trimmed ...]") and trimmed.endswith("line 199")


def test_the_earliest_stage_leads_the_reason_and_others_follow():
    from geak_evaluator_triton.verdict import Verdict

    verdict = Verdict()
    verdict.fail("anticheat", "computed with torch", key="compute")
    verdict.fail("anticheat", "computed with torch again", key="compute")
    verdict.fail("stage1", "wrong values")
    assert verdict.first.stage == "stage1"
    assert verdict.reason() == "wrong values; also: computed with torch"


def test_large_outputs_are_scanned_in_slices_with_exact_counts_and_first_indices(monkeypatch):
    import geak_evaluator_triton.value_compare as compare

    monkeypatch.setattr(compare, "CHUNK", 16)  # many slices on a small tensor
    expected = torch.arange(100, dtype=torch.float32).reshape(10, 10)
    actual = expected.clone()
    for flat in (3, 40, 41, 99):  # the first slice, two in a later one, the last element
        actual.view(-1)[flat] += 10.0
    actual.view(-1)[60] += 5e-6  # within tolerance: not counted
    (mismatch,) = compare_values(expected, actual)
    assert mismatch["count"] == 4
    assert [f["index"] for f in mismatch["first"]] == [[0, 3], [4, 0], [4, 1], [9, 9]]
    assert mismatch["max_abs_error"] == 10.0
    ints = torch.arange(50, dtype=torch.int32)
    bumped = ints.clone()
    bumped[33] = -1
    (mismatch,) = compare_values(ints, bumped)
    assert mismatch["count"] == 1 and mismatch["first"][0]["index"] == [33]


def test_identical_bits_are_equal_whatever_the_values_and_signed_zeros_are_close():
    nan_payload = torch.tensor([math.nan, -math.inf, 0.0]).view(torch.int32)
    nan_payload[0] = 0x7FC00123  # a NaN with its own payload
    values = nan_payload.view(torch.float32)
    assert compare_values(values, values.clone()) == []
    assert compare_values(torch.tensor([0.0]), torch.tensor([-0.0])) == []
    assert compare_values(torch.tensor([True, False]), torch.tensor([True, True]))


def test_the_slice_buffers_decide_as_isclose_does_with_specials_in_every_slice(monkeypatch):
    import geak_evaluator_triton.value_compare as compare

    monkeypatch.setattr(compare, "CHUNK", 16)
    generator = torch.Generator().manual_seed(3)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        atol, rtol = tolerance_for(str(dtype).removeprefix("torch."))
        expected = torch.randn(200, generator=generator).to(dtype)
        for trial in range(6):
            actual = expected.clone()
            if trial:  # a few elements nudged by about the tolerance, either side of it
                picks = torch.randint(0, 200, (5,), generator=generator)
                actual[picks] += (atol + rtol * expected[picks].abs()) * (0.5 + trial * 0.25)
            specials = torch.randint(0, 200, (3,), generator=generator)
            expected_here = expected.clone()
            for index, value in zip(specials.tolist(), (math.nan, math.inf, -math.inf), strict=True):
                expected_here[index] = value
                actual[index] = value if trial % 2 == 0 else 1.0  # the same special, or a number
            work = torch.float64 if dtype == torch.float64 else torch.float32  # as the judge computes
            close = torch.isclose(actual.to(work), expected_here.to(work), rtol=rtol, atol=atol, equal_nan=True)
            found = compare_values(expected_here, actual)
            assert (found == []) == bool(close.all()), (dtype, trial)
            if found:
                assert found[0]["count"] == int((~close).sum()), (dtype, trial)
