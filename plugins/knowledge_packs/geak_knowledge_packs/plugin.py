"""Hook implementations of geak_knowledge_packs."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_knowledge_packs.packs import HardwarePack, TritonCorePack


@hookimpl
def geak_register_knowledge_packs(register):  # type: ignore[no-untyped-def]
    register(
        "triton-core",
        TritonCorePack,
        description="Triton essentials: masks, offsets, tl.dot, stable reductions, autotune",
    )
    register(
        "hardware",
        HardwarePack,
        description="the target accelerator's figures and tuning advice (vendor and arch)",
    )
