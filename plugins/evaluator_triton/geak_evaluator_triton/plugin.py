"""Hook implementations of geak_evaluator_triton (registers components as they become ready)."""
