"""Hook implementations of geak_llm_replay: the ``replay`` LLM backend."""

from __future__ import annotations

from geak_core import hookimpl

from geak_llm_replay.backend import ReplayOptions, build


@hookimpl
def geak_register_llm_backends(register):  # type: ignore[no-untyped-def]
    register(
        "replay",
        build,
        options=ReplayOptions,
        description="replies from a recorded run (strict or sequential) or from a script, no LLM",
    )
