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
        description="the launch configurations nearest a candidate's own that fit the device, "
                    "judged, the fastest correct kept",
    )
