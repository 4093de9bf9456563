"""Hook implementations of geak_llm_gemini (registers components as they become ready)."""
