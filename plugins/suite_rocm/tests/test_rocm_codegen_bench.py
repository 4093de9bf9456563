"""``bench/rocm_codegen.py`` as a real subprocess on a synthetic ROCm_v1 folder: it compiles both
sides of every timed launch for a GPU target without a GPU, and tells same layouts from
different ones (a copy of our reference against an original whose sizes are annotated ``int``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from geak_suite_rocm.suite import REFERENCES

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[3] / "bench" / "rocm_codegen.py"
SEPARATOR = "#" * 146
HARNESS = "def test_original():\n    raise AssertionError('never imported')\n"


def _run(tmp_path: Path, original: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    folder = tmp_path / "ROCm_v1"
    folder.mkdir(exist_ok=True)
    (folder / "triton_multreduce_matmul_kernel.py").write_text(original + SEPARATOR + "\n" + HARNESS)
    out = tmp_path / "codegen.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["GEAK_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, str(BENCH), "--rocm-v1", str(folder), "--tasks",
                           "triton_multreduce_matmul_kernel", "--json", str(out), *extra],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads(out.read_text())["tasks"][0]


def test_our_reference_against_itself_compiles_to_the_same_layouts_and_an_unannotated_one_does_not(tmp_path):
    reference = (REFERENCES / "triton_multreduce_matmul_kernel.py").read_text()
    proc, same = _run(tmp_path, reference)
    assert same["compiled"] >= 4 and same["same_layouts"] == same["compiled"]
    assert all(row["same_configs"] for row in same["cases"])
    assert f"{same['compiled']} of {same['compiled']} compiled launches with the same layouts" in proc.stdout
    # Without the `int` annotations a unit stride becomes a constant: other layouts at some launch.
    unannotated = tmp_path / "unannotated.py"
    unannotated.write_text(reference.replace(": int", ""))
    _, different = _run(tmp_path, reference, "--reference", str(unannotated))
    assert different["compiled"] == same["compiled"] and different["same_layouts"] < different["compiled"]
