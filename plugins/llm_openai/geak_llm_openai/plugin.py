"""Hook implementations of geak_llm_openai (registers components as they become ready)."""
