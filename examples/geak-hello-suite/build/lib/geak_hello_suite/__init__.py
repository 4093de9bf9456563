"""An example third-party geak-core plugin: a suite with one task."""
