"""Hook implementations of geak_tuner_grid."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_tuner_grid.tuner import GridTuner, GridTunerOptions


@hookimpl
def geak_register_tuners(register):  # type: ignore[no-untyped-def]
    register(
        "grid",
        GridTuner,
        options=GridTunerOptions,
        description="launch configurations over the range the device allows, coarse to fine as a "
                    "cheap model ranks them, judged, the fastest correct kept",
    )
