"""geak_suite_tritonbench plugin for geak-core."""
