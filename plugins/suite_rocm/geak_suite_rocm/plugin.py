"""Registers the ``rocm`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_rocm.suite import RocmSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register("rocm", RocmSuite, description=RocmSuite.description)
