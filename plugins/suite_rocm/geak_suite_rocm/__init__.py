"""geak_suite_rocm plugin for geak-core."""
