"""ScalingIntelligence/KernelBench as a geak-core suite."""
