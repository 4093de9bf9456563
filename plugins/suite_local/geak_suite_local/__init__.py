"""Your own operators as a geak-core suite: files in KernelBench's format."""
