"""Registers the ``local`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_local.suite import LocalOptions, LocalSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register("local", LocalSuite, options=LocalOptions, description=LocalSuite.description)
