"""geak_optimizer_opro plugin for geak-core."""
