"""What a judge's child costs to start, part by part, and when a fresh judge's spares are up.

1. ``--repeats`` fresh processes, one after another, each importing what a spare child
   preloads (``geak_evaluator_triton.warm``) one part at a time: Python itself (until the
   script runs), torch, Triton, the judge's child modules, the compute monitor's first
   entry (which imports ``torch._dynamo``), and on a GPU the CUDA context and Triton's
   driver helpers. Seconds per part; the first process also pays what a machine's first
   use of them costs.
2. A fresh judge: seconds from resolving its runtime (when it starts its spares) until
   each spare is ready, per slot, over ``--watch`` seconds.

    python bench/child_start.py --json start.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

PARTS = r'''
import json, sys, time
began = float(sys.argv[1])
marks = {"python": time.time() - began}
def mark(name, since=[time.time()]):
    now = time.time()
    marks[name] = round(now - since[0], 3)
    since[0] = now
import torch; mark("torch")
import triton, triton.language; mark("triton")
import geak_evaluator_triton.child_jobs, geak_evaluator_triton.guards; mark("child_modules")
from geak_evaluator_triton.checks.torch_compute import ComputeMonitor
ComputeMonitor(__file__, allow_copies=False, gpu=False); mark("monitor")
if torch.cuda.is_available():
    torch.cuda.init(); torch.empty(1, device="cuda"); mark("cuda_context")
    from triton.runtime import driver
    device = driver.active.get_current_device(); driver.active.get_current_stream(device); mark("driver_helpers")
marks["python"] = round(marks["python"], 3)
print(json.dumps(marks))
'''


def parts(repeats: int) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "parts.py")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(PARTS)
        for _ in range(repeats):
            began = time.time()
            proc = subprocess.run([sys.executable, script, repr(began)], capture_output=True, text=True,
                                  timeout=600)
            row: dict[str, Any] = {"wall_s": round(time.time() - began, 3), "ok": proc.returncode == 0}
            if proc.returncode == 0:
                row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
            else:
                row["error"] = proc.stderr[-2000:]
            out.append(row)
    return out


def spares(watch_s: float, mode: str) -> dict[str, Any]:
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    judge = TritonEvaluator(TritonEvaluatorOptions(mode=mode, spare_children="on"))
    try:
        began = time.monotonic()
        runtime = judge.runtime()
        ready: dict[int, float] = {}
        seen: dict[int, float] = {}
        while time.monotonic() - began < watch_s and len(ready) < len(runtime.slots):
            now = round(time.monotonic() - began, 3)
            with judge.children._spare_lock:
                current = dict(judge.children._spares)
            for index, spare in current.items():
                seen.setdefault(index, now)
                if index not in ready and spare.ready():
                    ready[index] = now
            time.sleep(0.01)
        return {"slots": len(runtime.slots), "started_s": seen, "ready_s": ready}
    finally:
        judge.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--watch", type=float, default=60.0)
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    from geak_core.engine.store import atomic_write

    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "parts": parts(args.repeats)}
    if args.json_out:
        atomic_write(args.json_out, json.dumps(result, indent=2))
    result["spares"] = spares(args.watch, args.mode)
    if args.json_out:
        atomic_write(args.json_out, json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
