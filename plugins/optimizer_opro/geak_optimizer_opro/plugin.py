"""Hook implementations of geak_optimizer_opro."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_optimizer_opro.optimizer import OproOptimizer, OproOptions


@hookimpl
def geak_register_optimizers(register):  # type: ignore[no-untyped-def]
    register(
        "opro",
        OproOptimizer,
        options=OproOptions,
        description="OPRO-style archive of the best correct versions, shown worst to best",
    )
