"""Registers the ``kernelbenchx`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register(
        "kernelbenchx",
        KernelBenchXSuite,
        options=KernelBenchXOptions,
        description=KernelBenchXSuite.description,
    )
