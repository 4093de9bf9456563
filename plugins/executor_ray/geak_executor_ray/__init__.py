"""The ``ray`` executor: judges on the workers of a Ray cluster (docs/executors.md)."""
