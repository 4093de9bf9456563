"""Hook implementations of geak_retriever_codesim (registers components as they become ready)."""
