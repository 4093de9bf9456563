"""Hook implementations of geak_suite_tritonbench (registers components as they become ready)."""
