"""Registers the ``kernelbench`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_kernelbench.suite import KernelBenchOptions, KernelBenchSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register("kernelbench", KernelBenchSuite, options=KernelBenchOptions,
             description=KernelBenchSuite.description)
