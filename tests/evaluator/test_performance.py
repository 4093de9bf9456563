"""Performance figures from timings: throughput, roofline fraction, bound; the side-work and peak checks."""

from __future__ import annotations

import pytest
from geak_core.api.tasks import Case
from geak_evaluator_triton.performance import shape_result
from geak_hw_nvidia_hopper.profiles import H100


def timing(**overrides):
    message = {"reference_ms": 2.0, "candidate_ms": 1.0, "reference_gap_ms": 0.02, "candidate_gap_ms": 0.02}
    message.update(overrides)
    return message


def test_throughput_and_roofline_come_from_the_candidates_latency():
    case = Case(name="gemm", flops=2 * 4096**3, bytes=3 * 2 * 4096**2, dtype="float16")
    shape = shape_result(case, timing(), H100)
    assert shape.speedup == 2.0
    assert shape.achieved_tflops == pytest.approx(2 * 4096**3 / 1e-3 / 1e12)
    assert shape.achieved_gbs == pytest.approx(3 * 2 * 4096**2 / 1e-3 / 1e9)
    assert shape.roofline_fraction == pytest.approx(shape.achieved_tflops / 989.4)
    assert shape.bound == "compute"


def test_a_streaming_kernel_is_memory_bound_against_peak_bandwidth():
    case = Case(name="add", flops=1 << 24, bytes=3 * 4 * (1 << 24), dtype="float32")
    shape = shape_result(case, timing(candidate_ms=0.1), H100)
    assert shape.bound == "memory"
    assert shape.roofline_fraction == pytest.approx(shape.achieved_gbs / 3350.0)


def test_without_a_profile_there_is_no_roofline_figure():
    case = Case(name="add", flops=10, bytes=10, dtype="float32")
    shape = shape_result(case, timing(), None)
    assert shape.roofline_fraction is None and shape.bound is None
    assert shape.achieved_gbs is not None


def test_work_the_events_missed_is_flagged_and_charged():
    from geak_evaluator_triton.checks.side_work import charged_latency

    latency, hidden = charged_latency(timing(candidate_ms=0.01, candidate_gap_ms=1.52))
    assert hidden and latency == pytest.approx(0.01 + 1.5)


def test_launch_overhead_like_the_references_is_not_flagged():
    from geak_evaluator_triton.checks.side_work import charged_latency

    assert charged_latency(timing(candidate_gap_ms=0.04)) == (1.0, False)


def test_a_case_faster_than_the_hardware_allows_is_named():
    from geak_evaluator_triton.checks.peak import above_peak

    # add of 2^24 float32 elements: 201 MB in 0.05 ms is 4 TB/s, above the H100's 3.35 TB/s
    case = Case(name="add", flops=1 << 24, bytes=3 * 4 * (1 << 24), dtype="float32")
    fast = shape_result(case, timing(candidate_ms=0.05), H100)
    assert "1.20x the device's peak" in above_peak(fast) and "4027 GB/s" in above_peak(fast)
    assert above_peak(shape_result(case, timing(candidate_ms=0.062), H100)) == ""  # 0.97x: possible
    assert above_peak(shape_result(case, timing(candidate_ms=0.05), None)) == ""  # no profile, no check


def test_a_float32_case_is_measured_against_the_tf32_rate_where_the_chip_has_one():
    from geak_evaluator_triton.performance import peak_rate
    from geak_hw_rocm_mi300.profiles import MI250

    assert peak_rate(H100, "float32") == H100.peak_tflops["tf32"] > H100.peak_tflops["fp32"]
    assert peak_rate(H100, "float16") == H100.peak_tflops["fp16"]
    assert peak_rate(MI250, "float32") == MI250.peak_tflops["fp32"]  # CDNA2: no TF32
    assert peak_rate(H100, None) is None and peak_rate(H100, "complex32") is None
    # KernelBench-X conv2d's largest case on the H100: 947 GFLOP in 2.86 ms, on TF32 units
    case = Case(name="conv2d", flops=947_091_668_992.0, bytes=415_244_288.0, dtype="float32")
    shape = shape_result(case, timing(candidate_ms=2.8627), H100)
    assert shape.roofline_fraction == pytest.approx(330.84 / 494.7, rel=1e-3) and shape.bound == "compute"


def test_each_shape_says_how_precisely_its_latencies_are_known():
    case = Case(name="add", dtype="float32")
    shape = shape_result(case, timing(repetitions=240, reference_ci=0.004, candidate_ci=0.007), None)
    assert shape.repetitions == 240 and shape.interval == pytest.approx(0.007)
    assert shape.to_dict()["interval"] == pytest.approx(0.007)
    # a side whose interval could not be formed (too few repetitions): no interval at all
    assert shape_result(case, timing(reference_ci=None, candidate_ci=0.01), None).interval is None


def test_the_busy_wait_covers_the_launch_path_and_no_more():
    from geak_evaluator_triton.timed_calls import HOLD_MARGIN, MAX_HOLD_US, hold_for

    assert hold_for(40.0, 10.0) == pytest.approx(HOLD_MARGIN * 40.0)  # a Triton launch: 60 us, not 100
    assert hold_for(2.0, 10.0) == 10.0  # never below the floor
    assert hold_for(1e6, 10.0) == MAX_HOLD_US  # a host path of a second is not waited out
    assert hold_for(40.0, 0.0) == 0.0  # queue_ahead_us = 0: none


def test_the_flush_is_twice_the_profiles_caches_unless_set():
    import dataclasses

    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.timing_session import flush_bytes
    from geak_hw_rocm_mi300.profiles import MI300X

    mib = 1024 * 1024
    assert flush_bytes(TritonEvaluatorOptions(), H100) == 100 * mib  # 2 x 50 MiB L2
    assert flush_bytes(TritonEvaluatorOptions(), MI300X) == 2 * (32 + 256) * mib  # L2 + Infinity Cache
    assert flush_bytes(TritonEvaluatorOptions(), None) == 256 * mib
    assert flush_bytes(TritonEvaluatorOptions(flush_mib=64), H100) == 64 * mib
    tiny = dataclasses.replace(H100, l2_cache_mib=1.0)
    assert flush_bytes(TritonEvaluatorOptions(), tiny) == 32 * mib
    assert "flush_mib must be >= 0" in TritonEvaluatorOptions(flush_mib=-1).validate()[0]
