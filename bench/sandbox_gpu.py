"""What the sandbox's confinement, namespaces and limits leave a GPU job: does CUDA, Triton's
compiler and pinned memory still work inside, and what is refused.

    python3 bench/sandbox_gpu.py --out sandbox.json

Each variant runs one job in a sandboxed child (``geak_core.kit.sandbox``): it compiles and runs
a Triton kernel, allocates device and pinned host memory, then tries to write into the
project tree, the user's home and another folder, and to open a TCP connection. Variants:
a fresh child that creates its CUDA context after confining itself (which fails: the driver
needs what the confinement refuses); a fresh child and a spare child that create it before
(the judge's way: ``preload``); and a spare under a small host-memory limit (RLIMIT_DATA),
which the CUDA runtime's address-space reservations must not trip. Prints one JSON line per variant.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gpu_job(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """Runs inside the sandbox."""
    began = time.perf_counter()
    out: dict[str, Any] = {}
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)

    try:
        x = torch.randn(1 << 20, device="cuda")
        y = torch.randn_like(x)
        z = torch.empty_like(x)
        add[(triton.cdiv(x.numel(), 1024),)](x, y, z, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        out["triton_kernel"] = "right" if torch.allclose(z, x + y) else "wrong"
        big = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
        out["device_2gib"] = int(big.numel())
        del big
        pinned = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
        out["pinned_256mib"] = bool(pinned.is_pinned())
    except Exception as exc:  # what broke is the finding
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["cache_files"] = sum(len(files) for _, _, files in os.walk(os.environ.get("TRITON_CACHE_DIR", ".")))
    writes = {}
    for path in args["write"]:
        try:
            with open(path, "a") as handle:
                handle.write("")
            writes[path] = "written"
        except OSError as exc:
            writes[path] = f"refused: {exc.strerror}"
    out["writes"] = writes
    try:
        socket.create_connection(("127.0.0.1", args["port"]), timeout=2).close()
        out["tcp"] = "connected"
    except OSError as exc:
        out["tcp"] = f"refused: {exc}"
    out["pid"] = os.getpid()
    out["job_s"] = round(time.perf_counter() - began, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parsed = parser.parse_args()
    sys.path.insert(0, HERE)
    from geak_core.kit.confinement import Confinement, landlock_abi
    from geak_core.kit.limits import ChildLimits, describe_process_limit, physical_memory_mb
    from geak_core.kit.sandbox import namespaces_available, run_sandboxed, start_spare

    facts = {"kernel": platform.release(), "euid": os.geteuid(), "landlock_abi": landlock_abi(),
             "namespaces": namespaces_available(), "processes": describe_process_limit(namespaces_available()),
             "memory_mb": physical_memory_mb()}
    print(json.dumps({"facts": facts}), flush=True)
    rows: list[dict[str, Any]] = [{"facts": facts}]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    home_file = os.path.join(os.path.expanduser("~"), ".geak-sandbox-gpu-probe")
    project_file = os.path.join(ROOT, "README.md")
    variants = [(False, False, 16384), (False, True, 16384), (True, True, 16384), (True, True, 2048)]
    for spare_child, preload, memory_mb in variants:
        if True:
            cache = tempfile.mkdtemp(prefix="geak-probe-cache-")
            other = tempfile.mkdtemp(prefix="geak-probe-other-")
            limits = ChildLimits(memory_mb=memory_mb, processes=1024, open_files=4096, file_mb=4096)
            isolate = namespaces_available()
            spare = None
            if spare_child:
                spare = start_spare({}, preload=("geak_evaluator_triton.warm",), isolate=isolate, limits=limits)
                assert spare is not None and spare.wait_ready(120)
            began = time.monotonic()
            result = run_sandboxed(
                "sandbox_gpu:gpu_job",
                {"write": [project_file, home_file, os.path.join(other, "x"), os.path.join(cache, "ok")],
                 "port": listener.getsockname()[1]},
                timeout_s=300, sys_path=[HERE, *sys.path], isolate=isolate, limits=limits, spare=spare,
                preload=("geak_evaluator_triton.warm",) if preload else (),
                confine=Confinement(writable=[cache]), job_env={"TRITON_CACHE_DIR": cache})
            row = {"spare": spare_child, "preload": preload, "memory_mb": memory_mb, "isolate": isolate,
                   "wall_s": round(time.monotonic() - began, 3), "completed": result.completed,
                   "exit": result.describe_exit(), "returned": result.returned,
                   "stderr": result.stderr[-1500:] if not result.completed else ""}
            print(json.dumps(row), flush=True)
            rows.append(row)
    listener.close()
    if os.path.exists(home_file):
        os.remove(home_file)
    if parsed.out:
        with open(parsed.out, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
