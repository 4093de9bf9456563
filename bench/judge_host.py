"""The judge's host work under load: children's outputs crossing into the judge and compared.

``--children`` sandboxed children at once each send ``--frames`` runs of ``--mib`` MiB
of float16 outputs (with a rerun of the same size when ``--rerun``), as a candidate's
child does; the judge reads them with the sandbox's reader, queues each run to a
:class:`~geak_evaluator_triton.candidate_run.Comparisons` thread of its own per child
and compares it (``compare_frame``'s work: the outputs against an expected tensor, the
rerun bit for bit). No GPU is used: this is the part of a verdict that eight candidates
of an output-heavy task (flash attention: about 1 GB a candidate) share on one host.

Per configuration: the wall time of all children, the transfer window (first run frame
received to last comparison done) and the GB/s through it, and per child the seconds it spent
sending (``Channel.sent_s``: writing frames, the judge's reading and any wait for room
in the comparison queue included) and the seconds of comparing.

``--chunk`` sweeps the comparison's slice size, ``--torch-threads`` the judge's torch threads.

``--rooms``: instead, how fast one process reads 128 MiB buffers out of a memory file into
fresh room of each kind (a bytearray, which the interpreter zero-fills holding its lock; an
anonymous mapping, as the sandbox's reader now takes; a reused buffer, the ceiling), with
one reading thread and with eight.

    python bench/judge_host.py --children 1,8 --frames 8 --mib 128 --json host.json
    python bench/judge_host.py --rooms
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _values(mib: int, differ: bool) -> Any:
    import torch

    generator = torch.Generator().manual_seed(7)
    value = torch.randn(mib << 19, generator=generator).to(torch.float16)  # 2 bytes an element
    if differ:  # within tolerance, not the same bits: the comparison scans every element
        value = value + torch.full_like(value, 1e-3)
    return value


def child_job(args: dict[str, Any], channel: Any) -> dict[str, Any]:
    """The child: ``frames`` run frames, each with its outputs (and rerun)."""
    values = _values(int(args["mib"]), bool(args["differ"]))
    for index in range(int(args["frames"])):
        frame = {"kind": "run", "stage": "stage1", "case": "c", "seed": index, "outputs": values}
        if args["rerun"]:
            frame["rerun"] = values.clone()
        channel.send(frame)
    return {"sent_s": round(channel.sent_s, 4)}


def judge_one(args: argparse.Namespace, expected: Any, isolate: bool) -> dict[str, Any]:
    from geak_core.kit.sandbox import run_sandboxed
    from geak_evaluator_triton.candidate_run import Comparisons
    from geak_evaluator_triton.run_compare import bitwise_equal
    from geak_evaluator_triton.value_compare import compare_values

    compare_s = [0.0]
    findings: list[Any] = []
    first: list[float] = []

    def compare(frame: dict[str, Any], digest: dict[str, Any]) -> None:
        began = time.perf_counter()
        found = compare_values(expected, frame["outputs"], {}, "output")
        if "rerun" in frame:
            found += compare_values(frame["outputs"], frame["rerun"], {}, "output")
            bitwise_equal(frame["outputs"], frame["rerun"])
        digest["mismatches"] = len(found)
        compare_s[0] += time.perf_counter() - began

    comparisons = Comparisons(compare)

    def on_message(message: Any, replier: Any) -> Any:
        if isinstance(message, dict) and message.get("kind") == "run":
            if not first:
                first.append(time.perf_counter())
            digest = {"seed": message["seed"]}
            findings.append(digest)
            with replier.judge_waiting():
                comparisons.put(message, digest)
            return digest
        return None

    began = time.perf_counter()
    result = run_sandboxed("judge_host:child_job", {"mib": args.mib, "frames": args.frames, "rerun": args.rerun,
                                                    "differ": args.differ},
                           timeout_s=600, sys_path=[HERE, *sys.path], on_message=on_message, isolate=isolate,
                           result_limit=64 << 30)
    comparisons.drain()
    comparisons.close()
    if not result.completed:
        raise SystemExit(f"a child failed: {result.describe_exit()}\n{result.stderr[-2000:]}")
    if comparisons.error is not None:
        raise comparisons.error
    if any(d.get("mismatches") for d in findings) or len(findings) != args.frames:
        raise SystemExit(f"unexpected findings: {findings}")
    done = time.perf_counter()
    return {"wall_s": round(done - began, 3), "sent_s": result.returned["sent_s"],
            "compare_s": round(compare_s[0], 3), "first": first[0], "done": done}


def measure(args: argparse.Namespace, children: int, expected: Any, isolate: bool) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [{} for _ in range(children)]

    def one(index: int) -> None:
        rows[index] = judge_one(args, expected, isolate)

    began = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(children)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    # From the first run frame's arrival to the last comparison's end: the children's start-up
    # (importing torch) left out.
    moving = max(r["done"] for r in rows) - min(r["first"] for r in rows)
    gb = children * args.frames * args.mib * (2 if args.rerun else 1) / 1024
    return {"children": children, "wall_s": round(wall, 3), "transfer_s": round(moving, 3), "gb": round(gb, 2),
            "gb_s": round(gb / moving, 2),
            "sent_s_median": statistics.median(r["sent_s"] for r in rows),
            "compare_s_median": statistics.median(r["compare_s"] for r in rows),
            "child_wall_s_median": statistics.median(r["wall_s"] for r in rows)}


def rooms(threads: int, size: int = 128 << 20, count: int = 8) -> dict[str, float]:
    """GB/s into fresh room of each kind, ``threads`` threads each reading ``count`` buffers."""
    import mmap

    files = []
    for _ in range(threads):
        fd = os.memfd_create("geak-rooms")
        os.ftruncate(fd, size * count)
        block = os.urandom(1 << 20) * (size >> 20)
        for index in range(count):
            os.pwrite(fd, block, index * size)
        files.append(fd)

    def read(fd: int, kind: str) -> None:
        reused = bytearray(size)
        for index in range(count):
            room = {"bytearray": lambda: bytearray(size), "mapping": lambda: mmap.mmap(-1, size),
                    "reused": lambda: reused}[kind]()
            view, got = memoryview(room), 0
            while got < size:
                got += os.preadv(fd, [view[got:]], index * size + got)
            del view, room

    out = {}
    for kind in ("bytearray", "mapping", "reused"):
        workers = [threading.Thread(target=read, args=(fd, kind)) for fd in files]
        began = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        out[kind + "_gb_s"] = round(threads * count * size / (time.perf_counter() - began) / 1e9, 2)
    for fd in files:
        os.close(fd)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", default="1,8", help="comma-separated counts of children at once")
    parser.add_argument("--frames", type=int, default=8, help="runs each child sends")
    parser.add_argument("--mib", type=int, default=128, help="MiB of outputs per run")
    parser.add_argument("--rerun", action="store_true", help="each run also carries a rerun of its outputs")
    parser.add_argument("--differ", action="store_true", help="outputs within tolerance but not bit-identical")
    parser.add_argument("--torch-threads", default="", help="comma-separated torch.set_num_threads values "
                        "for the judge (empty: torch's default only)")
    parser.add_argument("--isolate", action="store_true", help="children in their own namespaces, as on a GPU")
    parser.add_argument("--chunk", default="", help="comma-separated slice sizes (elements) for the comparison "
                        "(empty: the judge's own, value_compare.CHUNK)")
    parser.add_argument("--rooms", action="store_true", help="only measure reads into fresh room (see above)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if args.rooms:
        for threads in (1, 8):
            print(json.dumps({"threads": threads, **rooms(threads)}), flush=True)
        return 0
    import torch
    from geak_evaluator_triton import value_compare

    expected = _values(args.mib, False)
    results = []
    threads = [int(t) for t in args.torch_threads.split(",") if t] or [torch.get_num_threads()]
    chunks = [int(c) for c in args.chunk.split(",") if c] or [value_compare.CHUNK]
    for count in threads:
        torch.set_num_threads(count)
        for chunk in chunks:
            value_compare.CHUNK = chunk
            for children in (int(c) for c in args.children.split(",")):
                row = {"torch_threads": count, "chunk": chunk, **measure(args, children, expected, args.isolate)}
                print(json.dumps(row), flush=True)
                results.append(row)
    if args.json:
        from geak_core.engine.store import atomic_write

        atomic_write(args.json, json.dumps({"args": vars(args), "cpus": os.cpu_count(), "results": results},
                                           indent=1))
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # Not through the interpreter's shutdown: the comparison threads (daemons) may still be
    # ending inside torch, which then aborts the process.
    os._exit(status)
