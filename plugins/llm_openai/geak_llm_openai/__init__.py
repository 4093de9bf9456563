"""geak_llm_openai plugin for geak-core."""
