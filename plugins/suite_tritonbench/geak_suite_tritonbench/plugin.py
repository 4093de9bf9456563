"""Registers the ``tritonbench`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_tritonbench.suite import TritonBenchOptions, TritonBenchSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register(
        "tritonbench",
        TritonBenchSuite,
        options=TritonBenchOptions,
        description=TritonBenchSuite.description,
    )
