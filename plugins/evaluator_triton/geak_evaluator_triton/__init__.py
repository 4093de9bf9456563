"""geak_evaluator_triton plugin for geak-core."""
