"""geak_profiler_proton plugin for geak-core: Triton's proton profiler in the candidate's
child, its hatchet tree read back as per-kernel counters (NVIDIA and AMD)."""
