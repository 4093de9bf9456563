"""Hook implementations of geak_llm_replay (registers components as they become ready)."""
