"""Run one reference file's ``test_*`` functions alone, in this process, outside the judge:
how long each takes, and every thread's stack every ``DUMP_S`` seconds (default 30) on
stderr, to see where a reference that the judge reports as not finishing spends its time.

Trusted code only (a suite's reference, never a candidate)::

    TRITON_CACHE_DIR=/tmp/tc timeout 240 python bench/reference_alone.py \\
        <GEAK-eval>/geak_eval/data/TritonBench/data/TritonBench_G_v1/chunk_retention_ops.py

A file that runs its test at import (several TritonBench-G files do) is timed as its import.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import os
import sys
import time


def main(path: str) -> int:
    faulthandler.enable()  # a crash shows where
    faulthandler.dump_traceback_later(int(os.environ.get("DUMP_S", "30")), repeat=True)
    began = time.time()
    spec = importlib.util.spec_from_file_location("reference_alone", path)
    if spec is None or spec.loader is None:
        print(f"cannot import {path}", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    sys.modules["reference_alone"] = module
    spec.loader.exec_module(module)
    print(f"import {time.time() - began:.1f} s", flush=True)
    for name in sorted(n for n in dir(module) if n.startswith("test_")):
        started = time.time()
        try:
            getattr(module, name)()
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
            print(f"{name} ok {time.time() - started:.1f} s", flush=True)
        except Exception as exc:
            print(f"{name} raised {type(exc).__name__}: {str(exc)[:200]} after {time.time() - started:.1f} s",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
