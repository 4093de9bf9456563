"""KernelBench-X as a geak-core suite (the data stays in the user's own checkout)."""
