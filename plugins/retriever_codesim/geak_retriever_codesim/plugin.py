"""Hook implementations of geak_retriever_codesim."""

from __future__ import annotations

from geak_core.api.hookspecs import hookimpl

from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever


@hookimpl
def geak_register_retrievers(register):  # type: ignore[no-untyped-def]
    register(
        "codesim",
        CodeSimRetriever,
        options=CodeSimOptions,
        description="one-shot Triton example by code similarity (BM25), contamination-guarded",
    )
