"""Hook implementations of geak_profiler_proton."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_profiler_proton.profiler import ProtonProfiler


@hookimpl
def geak_register_profilers(register):  # type: ignore[no-untyped-def]
    register(
        "proton",
        ProtonProfiler,
        description="Triton's proton, in the candidate's child (NVIDIA and AMD): per-kernel "
                    "time, and FLOPs and bytes where the kernels' launch metadata declare them",
    )
