"""Hook implementations of geak_suite_rocm (registers components as they become ready)."""
