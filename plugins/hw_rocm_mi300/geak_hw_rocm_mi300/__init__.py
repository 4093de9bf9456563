"""geak_hw_rocm_mi300 plugin for geak-core."""
