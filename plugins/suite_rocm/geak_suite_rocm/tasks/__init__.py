"""One module per task: ``TASK`` plus a ``Harness`` (see ``geak_suite_rocm.suite``)."""
