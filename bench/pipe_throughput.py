"""How fast a child's outputs cross a pipe into the judge: the default buffer against the
1 MiB one the sandbox asks for (``geak_core.kit.sandbox.widen_pipe``).

A forked writer sends ``--mib`` MiB in 64 MiB writes; the reader reads them as
``sandbox._read_exact`` does. Prints GB/s per buffer size (Linux only).

    python bench/pipe_throughput.py --mib 1024
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def throughput(total: int, widen: bool) -> float:
    from geak_core.kit.sandbox import widen_pipe

    read_fd, write_fd = os.pipe()
    if widen:
        widen_pipe(read_fd)
    chunk = bytearray(64 << 20)
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(read_fd)
        sent = 0
        while sent < total:
            view = memoryview(chunk)[: min(len(chunk), total - sent)]
            sent += view.nbytes
            while view.nbytes:
                view = view[os.write(write_fd, view):]
        os._exit(0)
    os.close(write_fd)
    buffer = memoryview(bytearray(64 << 20))
    began = time.perf_counter()
    got = 0
    while got < total:
        n = os.readv(read_fd, [buffer])
        if n == 0:
            break
        got += n
    seconds = time.perf_counter() - began
    os.waitpid(pid, 0)
    os.close(read_fd)
    return got / seconds / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        raise SystemExit("Linux only")
    total = args.mib << 20
    print(json.dumps({"mib": args.mib, "default_gb_s": round(throughput(total, False), 2),
                      "widened_gb_s": round(throughput(total, True), 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
