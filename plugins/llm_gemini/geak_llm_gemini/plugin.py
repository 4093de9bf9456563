"""Hook implementations of geak_llm_gemini: the ``gemini`` LLM backend."""

from __future__ import annotations

from geak_core import hookimpl

from geak_llm_gemini.backend import GeminiOptions, build


@hookimpl
def geak_register_llm_backends(register):  # type: ignore[no-untyped-def]
    register(
        "gemini",
        build,
        options=GeminiOptions,
        description="Google Gemini generateContent over HTTP",
    )
