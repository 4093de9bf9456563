"""Hook implementations of geak_profiler_rocprof."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_profiler_rocprof.profiler import RocprofProfiler, RocprofProfilerOptions


@hookimpl
def geak_register_profilers(register):  # type: ignore[no-untyped-def]
    register(
        "rocprof",
        RocprofProfiler,
        options=RocprofProfilerOptions,
        description="AMD rocprofv3: per-kernel time, HBM bytes, VALU and MFMA busy, occupancy, "
                    "registers, scratch, LDS and launch shape",
    )
