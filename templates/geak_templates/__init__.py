"""geak_templates plugin for geak-core."""
