"""Hook implementations of geak_agent_tools."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_agent_tools.generator import ToolsGenerator, ToolsOptions


@hookimpl
def geak_register_generators(register):  # type: ignore[no-untyped-def]
    register("tools", ToolsGenerator, options=ToolsOptions,
             description="GEAK's prompts; within each round the model drafts, judges and re-drafts through its "
                         "backend's tool calling (judge, show_task; profile, tune where they can run)")
