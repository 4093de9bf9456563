"""Hook implementations of geak_profiler_ncu."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_profiler_ncu.profiler import NcuProfiler, NcuProfilerOptions


@hookimpl
def geak_register_profilers(register):  # type: ignore[no-untyped-def]
    register(
        "ncu",
        NcuProfiler,
        options=NcuProfilerOptions,
        description="NVIDIA Nsight Compute: per-kernel time, DRAM/SM/tensor throughput, "
                    "occupancy, registers, spills, shared memory, launch shape, top stalls",
    )
