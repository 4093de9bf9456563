"""geak_knowledge_packs plugin for geak-core."""
