"""geak_profiler_rocprof plugin for geak-core: AMD rocprofv3's kernel trace and counters of
a correct candidate's kernels, read from its CSV files."""
