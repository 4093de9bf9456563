"""Hook implementations of geak_llm_anthropic: the ``anthropic`` LLM backend."""

from __future__ import annotations

from geak_core import hookimpl

from geak_llm_anthropic.backend import AnthropicOptions, build


@hookimpl
def geak_register_llm_backends(register):  # type: ignore[no-untyped-def]
    register(
        "anthropic",
        build,
        options=AnthropicOptions,
        description="Anthropic Messages API (Claude models) over HTTP",
    )
