"""Hook implementations of geak_agent_geak."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_agent_geak.generator import GeakGenerator
from geak_agent_geak.policy import GeakPolicy, PolicyOptions
from geak_agent_geak.reflector import GeakReflector, ReflectorOptions


@hookimpl
def geak_register_generators(register):  # type: ignore[no-untyped-def]
    register("geak", GeakGenerator,
             description="task, retrieved examples and knowledge; restarts list abandoned strategies; "
                         "optimisation shows the optimizer's archive")


@hookimpl
def geak_register_reflectors(register):  # type: ignore[no-untyped-def]
    register("geak", GeakReflector, options=ReflectorOptions,
             description="the failed code and the judge's report, with the lineage's earlier failures (Reflexion)")


@hookimpl
def geak_register_policies(register):  # type: ignore[no-untyped-def]
    register("geak", GeakPolicy, options=PolicyOptions,
             description="fix failures up to a limit, then restart (debugging trap); "
                         "fix failed optimisation proposals up to their own limit")
