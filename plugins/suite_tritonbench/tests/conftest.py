"""Fixtures of the TritonBench suite tests: our own small data folder, a private cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tritonbench_paths import DATA, GEAK_EVAL_ROOT, TASKS


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def make_suite():
    from geak_suite_tritonbench.suite import TritonBenchOptions, TritonBenchSuite

    def build(path: Path | str = DATA, **options):
        return TritonBenchSuite(TritonBenchOptions(path=str(path), **options))

    return build


@pytest.fixture
def copy_of_tasks(tmp_path):
    """A writable copy of the task folder alone (no JSON, no performance scripts)."""
    target = tmp_path / "copy" / "TritonBench_G_v1"
    shutil.copytree(TASKS, target)
    return target


@pytest.fixture
def copy_of_data(tmp_path):
    """A writable copy of the whole fixture tree: data/ (task files + JSON) and the
    performance scripts; returns the copy's data/ folder."""
    target = tmp_path / "copy" / "TritonBench"
    shutil.copytree(GEAK_EVAL_ROOT, target)
    return target / "data"
