"""Fixtures of the KernelBench-X suite tests: our own small checkout, a private cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernelbenchx_paths import ROOT


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def make_suite():
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite

    def build(path: Path | str = ROOT, **options):
        return KernelBenchXSuite(KernelBenchXOptions(path=str(path), **options))

    return build


@pytest.fixture
def copy_of_checkout(tmp_path):
    """A writable copy of the fixture checkout."""
    target = tmp_path / "copy" / "KernelBenchX"
    shutil.copytree(ROOT, target)
    return target
