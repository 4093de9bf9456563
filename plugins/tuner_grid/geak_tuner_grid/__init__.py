"""geak_tuner_grid plugin for geak-core: a candidate's launch knobs, found by reading its
source, and variants of it within a hardware profile's limits."""
