"""Runs to report on and export: the offline quickstart, run for real once per session, and
two timed runs written through the run store (no GPU here to time anything)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.timed_run import make_timed_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("quickstart")
    proc = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "run", str(ROOT / "recipes" / "quickstart.toml"),
         "--output-dir", str(out)],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if "KEY" not in k},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in out.iterdir() if (p / "store.sqlite").exists()]
    return run_dir


@pytest.fixture(scope="session")
def timed_runs(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("timed")
    return [make_timed_run(out, "full"), make_timed_run(out, "no-retriever", retriever="none")]
