"""Hook implementations of geak_knowledge_packs (registers components as they become ready)."""
