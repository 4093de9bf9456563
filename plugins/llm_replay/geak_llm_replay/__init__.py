"""geak_llm_replay plugin for geak-core."""
