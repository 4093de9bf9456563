"""The two small benchmark scripts run and report what they say they measure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_pipe_throughput_reports_both_buffer_sizes():
    proc = subprocess.run([sys.executable, str(BENCH / "pipe_throughput.py"), "--mib", "64"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["mib"] == 64 and figures["default_gb_s"] > 0 and figures["widened_gb_s"] > 0


def test_child_start_times_each_part_and_the_spares(tmp_path):
    out = tmp_path / "start.json"
    proc = subprocess.run([sys.executable, str(BENCH / "child_start.py"), "--repeats", "1", "--watch", "30",
                           "--mode", "interpreter", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = json.loads(out.read_text())
    (part,) = measured["parts"]
    assert part["ok"] and all(part[k] >= 0 for k in ("python", "torch", "triton", "child_modules", "monitor"))
    spares = measured["spares"]
    assert spares["slots"] >= 1 and set(spares["ready_s"]) <= set(spares["started_s"])
    assert spares["ready_s"], "no spare was ready within the watch"
