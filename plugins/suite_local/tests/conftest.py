"""The local suite's cache in each test's own folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The suite's cache (references, meta-run results) in the test's own folder."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("GEAK_CACHE_DIR", str(folder))
    return folder
