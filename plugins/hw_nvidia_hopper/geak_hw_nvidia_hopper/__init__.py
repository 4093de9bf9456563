"""geak_hw_nvidia_hopper plugin for geak-core."""
