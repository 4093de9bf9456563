"""geak_llm_gemini plugin for geak-core."""
