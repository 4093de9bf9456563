"""Registers the ``rocm`` suite."""

from __future__ import annotations

from geak_core import hookimpl

from geak_suite_rocm.suite import RocmOptions, RocmSuite


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register("rocm", RocmSuite, options=RocmOptions, description=RocmSuite.description)
