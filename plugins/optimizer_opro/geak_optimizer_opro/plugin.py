"""Hook implementations of geak_optimizer_opro (registers components as they become ready)."""
