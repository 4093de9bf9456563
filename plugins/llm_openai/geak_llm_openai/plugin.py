"""Hook implementations of geak_llm_openai: the ``openai`` LLM backend."""

from __future__ import annotations

from geak_core import hookimpl

from geak_llm_openai.backend import OpenAIOptions, build


@hookimpl
def geak_register_llm_backends(register):  # type: ignore[no-untyped-def]
    register(
        "openai",
        build,
        options=OpenAIOptions,
        description="OpenAI Chat Completions and compatible servers (vLLM, SGLang, Ollama, "
        "llama.cpp) over HTTP",
    )
