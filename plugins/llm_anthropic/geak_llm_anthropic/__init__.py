"""geak_llm_anthropic plugin for geak-core."""
