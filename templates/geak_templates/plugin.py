"""Hook implementations of geak_templates (registers components as they become ready)."""
