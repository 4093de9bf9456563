"""Performance figures: per-case latencies into throughput, roofline fraction and bound.

achieved GB/s = bytes / latency, achieved TFLOP/s = flops / latency; the
roofline fraction is the larger of the two utilisations against the hardware
profile's peak bandwidth and its peak rate for the case's dtype; a case is
compute bound when its arithmetic intensity (flops / bytes) reaches the ridge
point (peak FLOP/s / peak bandwidth), memory bound otherwise.

A float32 case's peak rate is the larger of the profile's fp32 and tf32 rates:
float32 inputs may run on TF32 matrix units (Triton's ``tl.dot`` and PyTorch's
convolutions do by default on NVIDIA), and against the fp32 rate alone
KernelBench-X's conv2d reached 4.9 of the peak on an H100 (331 TFLOP/s).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.components import HardwareProfile
from geak_core.api.model import ShapeResult
from geak_core.api.tasks import Case

INTERPRETER_NOTE = (
    "not measured: the Triton interpreter runs kernels on the CPU, so its latencies say "
    "nothing about GPU speed"
)
DTYPE_TO_PEAK = {
    "float64": "fp64", "fp64": "fp64", "float32": "fp32", "fp32": "fp32", "tf32": "tf32",
    "float16": "fp16", "fp16": "fp16", "bfloat16": "bf16", "bf16": "bf16", "int8": "int8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8", "fp8": "fp8",
}


def peak_rate(profile: HardwareProfile, dtype: str | None) -> float | None:
    """The profile's peak TFLOP/s for a case of ``dtype`` (float32: the fp32 or tf32 rate,
    whichever is larger), or None."""
    if not dtype:
        return None
    name = DTYPE_TO_PEAK.get(dtype, dtype)
    rates = [profile.peak_for(name)] + ([profile.peak_for("tf32")] if name == "fp32" else [])
    known = [r for r in rates if r]
    return max(known) if known else None


def shape_result(case: Case, message: dict[str, Any], profile: HardwareProfile | None) -> ShapeResult:
    """One case's timings (``reference_ms``, ``candidate_ms``: the latency charged) as a
    ShapeResult with throughput and roofline figures."""
    ref_ms = float(message["reference_ms"])
    cand_ms = float(message["candidate_ms"])
    intervals = [message.get("reference_ci"), message.get("candidate_ci")]
    shape = ShapeResult(case=case.name, reference_ms=ref_ms, candidate_ms=cand_ms,
                        flops=case.flops, bytes=case.bytes, dtype=case.dtype,
                        repetitions=message.get("repetitions"),
                        interval=max(intervals) if None not in intervals else None)
    seconds = cand_ms * 1e-3
    if case.bytes:
        shape.achieved_gbs = case.bytes / seconds / 1e9
    if case.flops:
        shape.achieved_tflops = case.flops / seconds / 1e12
    if profile is not None:
        memory = shape.achieved_gbs / profile.peak_bandwidth_gbs if shape.achieved_gbs else None
        peak = peak_rate(profile, case.dtype)
        compute = shape.achieved_tflops / peak if shape.achieved_tflops and peak else None
        values = [v for v in (memory, compute) if v is not None]
        shape.roofline_fraction = max(values) if values else None
        if case.flops and case.bytes and peak:
            ridge = peak * 1e12 / (profile.peak_bandwidth_gbs * 1e9)
            shape.bound = "compute" if case.flops / case.bytes >= ridge else "memory"
        elif memory is not None:
            shape.bound = "memory"
        elif compute is not None:
            shape.bound = "compute"
    return shape


def shape_stub(case: Case) -> ShapeResult:
    return ShapeResult(case=case.name, flops=case.flops, bytes=case.bytes, dtype=case.dtype)
