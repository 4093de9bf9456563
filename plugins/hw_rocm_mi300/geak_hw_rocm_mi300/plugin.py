"""Hook implementations of geak_hw_rocm_mi300 (registers components as they become ready)."""
