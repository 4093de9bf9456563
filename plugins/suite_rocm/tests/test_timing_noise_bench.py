"""``bench/timing_noise.py`` without a GPU: it refuses plainly (exit 2, nothing written), and
its repetitions-to-target helper finds the first look at which both medians were known
well enough, looking every 8 repetitions as the judge does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "timing_noise.py"


def _module():
    from geak_evaluator_triton.child_jobs import import_file

    return import_file("timing_noise_bench", str(BENCH))


def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path):
    out = tmp_path / "noise.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(BENCH), "--tasks", "test_add_kernel", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "needs a GPU" in proc.stderr
    assert not out.exists()


def test_repetitions_to_target_is_the_first_look_within_it():
    bench = _module()
    steady = [1.0] * 64
    noisy = [1.0 + 0.2 * (i % 2) for i in range(24)] + [1.0] * 40  # wide at first, then settles
    assert bench.first_within({"a": steady, "b": steady}, 0.01) == 16
    reps = bench.first_within({"a": steady, "b": noisy}, 0.01)
    assert reps is not None and reps > 16 and reps % 8 == 0
    assert bench.first_within({"a": [1.0 + 0.2 * (i % 2) for i in range(64)], "b": steady}, 0.01) is None
