"""geak_profiler_ncu plugin for geak-core: NVIDIA Nsight Compute's counters of a correct
candidate's kernels, read from its raw CSV page."""
