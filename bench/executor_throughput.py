"""Evaluations per minute: the local judge against N judges on a Ray cluster.

For each N of ``--workers`` this judges the same candidates twice over with

* **local**: the ``local`` executor as ``geak-core eval`` and ``geak-core run``
  judge by default, on N GPUs (``[evaluator] workers = N``): one judge process
  per GPU where N > 1, the judge in this process on one GPU; on a CPU, one
  judge with N interpreter children;
* **one-process**: the ``local`` executor with ``judges = 1``: one judge in this
  process for all N GPUs (the layout before judge processes);
* **ray**: the ``ray`` executor with N judges (``judges = N``), each holding one
  GPU (``--gpus-per-judge``), or ``--cpus-per-judge`` CPUs and that many
  interpreter children on a machine without GPUs.

Candidates are copies of the tasks' reference kernels (every one correct, the
most expensive verdict: every stage, and timing on a GPU), each copy with its
own comment inside its first kernel, so that no copy finds another's compiled
kernel in Triton's cache. Per configuration: **start** (seconds to build the
evaluator: for Ray, connecting and starting the judges), **cold** (the first
batch of ``--candidates``: reference outputs computed on each judge as it
meets a task) and **warm** (a second batch of as many fresh copies), as
evaluations per minute; and whether every verdict matches the local judge's.

    python bench/executor_throughput.py                                  # CPU: interpreter
    python bench/executor_throughput.py --mode gpu --workers 1 \\
        --tasks softmax,layernorm,test_gemm_no_scf --candidates 16 --json ray.json   # one GPU
    python bench/executor_throughput.py --mode gpu --workers 1,2,4,8 ...             # 8 GPUs

N Ray judges of one GPU each need N GPUs (a private instance refuses more at once).

``--address local`` (the default) starts a private Ray instance on this
machine for each configuration; ``--address auto`` or ``HOST:PORT`` uses a
running cluster (``ray start --head``), whose nodes then do the judging.
Prints a markdown table; ``--json`` writes the rows and the machine's details.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--tasks", default="test_add_kernel,softmax",
                        help="comma-separated rocm task ids whose references are the candidates")
    parser.add_argument("--candidates", type=int, default=8,
                        help="candidates per batch (two batches, cold and warm, per configuration)")
    parser.add_argument("--workers", default="1,2",
                        help="comma-separated N: local worker slots and Ray judges to compare")
    parser.add_argument("--executors", default="local,ray",
                        help="which of local,one-process,ray to measure (in that order per N)")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"],
                        help="the judge's mode (auto: gpu where one is visible)")
    parser.add_argument("--address", default="local",
                        help="Ray address: local (a private instance per configuration), auto or "
                             "HOST:PORT (a running cluster)")
    parser.add_argument("--gpus-per-judge", type=int, default=1, help="GPUs each Ray judge holds")
    parser.add_argument("--cpus-per-judge", type=float, default=1.0,
                        help="CPUs each Ray judge holds (and, under the interpreter, its children)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per judge child")
    parser.add_argument("--json", dest="json_out", default="", help="write rows and machine here")
    return parser.parse_args(argv)


def distinct(code: str, copy: int) -> str:
    """``code`` with a comment naming ``copy`` as the first line of its first jitted kernel's
    body (a kernel's source is its compile-cache key); at the end where none is found."""
    lines = code.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if re.match(r"\s*@triton\.jit", line):
            for j in range(i + 1, len(lines)):
                if re.search(r"\)\s*(->[^:]*)?:\s*(#.*)?$", lines[j]):
                    body = next((b for b in lines[j + 1:] if b.strip()), "    pass\n")
                    indent = body[: len(body) - len(body.lstrip())]
                    return "".join(lines[: j + 1] + [f"{indent}# copy {copy}\n"] + lines[j + 1:])
    return code + f"\n# copy {copy}\n"


def _jobs(tasks: list[Any], count: int, first: int) -> list[Any]:
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate

    jobs = []
    for k in range(count):
        task = tasks[k % len(tasks)]
        code = distinct(Path(task.reference).read_text(encoding="utf-8"), first + k)
        jobs.append(EvalJob(task, Candidate(id=f"{task.id}/copy{first + k}", task_id=task.id, code=code)))
    return jobs


def _verdict(result: Any) -> tuple[Any, ...]:
    return (result.call_ok, result.correct, result.failed_stage, tuple(sorted(result.flags)))


def measure(executor: str, n: int, tasks: list[Any], args: argparse.Namespace,
            batch_start: int) -> dict[str, Any]:
    from geak_core.cli.cli_eval import build_evaluator, build_executor

    interpreter = args.mode == "interpreter" or (args.mode == "auto" and _gpus() == 0)
    # on GPUs, "gpu" so that ``workers = N`` is also the number of GPUs the local executor's
    # judge processes share (under "auto" they would take every visible GPU)
    mode = "gpu" if not interpreter else args.mode
    started = time.monotonic()
    if executor in ("local", "one-process"):
        runner = build_executor("local", ["judges=1"] if executor == "one-process" else [])
        evaluator = build_evaluator("triton", {"mode": mode, "workers": n, "timeout_s": args.timeout}, runner)
    elif executor == "ray":
        runner = build_executor("ray", [f"address={json.dumps(args.address)}", f"judges={n}",
                                        f"gpus_per_judge={args.gpus_per_judge}",
                                        f"cpus_per_judge={args.cpus_per_judge}"])
        workers = max(1, int(args.cpus_per_judge)) if interpreter else 0
        evaluator = build_evaluator("triton", {"mode": mode, "workers": workers or None,
                                               "timeout_s": args.timeout}, runner)
    else:
        raise SystemExit(f"unknown executor {executor!r} (local, one-process, ray)")
    start_s = time.monotonic() - started
    row: dict[str, Any] = {"executor": executor, "n": n, "candidates": args.candidates,
                           "start_s": round(start_s, 2), "max_parallel": evaluator.max_parallel}
    verdicts: dict[str, tuple[Any, ...]] = {}
    try:
        for label, first in (("cold", batch_start), ("warm", batch_start + args.candidates)):
            jobs = _jobs(tasks, args.candidates, first)
            position = {job.candidate.id: f"{label} {k}" for k, job in enumerate(jobs)}
            began = time.monotonic()
            for job, result in evaluator.evaluate_many(jobs):
                verdicts[position[job.candidate.id]] = _verdict(result)
            seconds = time.monotonic() - began
            row[f"{label}_s"] = round(seconds, 2)
            row[f"{label}_per_min"] = round(60 * len(jobs) / seconds, 1)
    finally:
        evaluator.close()
    row["correct"] = sum(v[1] for v in verdicts.values())
    row["verdicts"] = verdicts
    print(f"{executor} n={n}: start {row['start_s']} s, cold {row['cold_per_min']}/min, "
          f"warm {row['warm_per_min']}/min, {row['correct']}/{len(verdicts)} correct", file=sys.stderr)
    return row


def _gpus() -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        return 0
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


def machine() -> dict[str, Any]:
    import torch
    import triton

    info: dict[str, Any] = {
        "date": datetime.date.today().isoformat(), "platform": platform.platform(),
        "python": platform.python_version(), "cpus": os.cpu_count(), "torch": torch.__version__,
        "triton": triton.__version__, "gpus": _gpus(),
    }
    if info["gpus"]:
        info["gpu"] = torch.cuda.get_device_name(0)
    try:
        import ray

        info["ray"] = ray.__version__
    except ImportError:
        info["ray"] = None
    return info


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| executor | N | slots | candidates | start s | cold evals/min | warm evals/min "
           "| verdicts as local |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['executor']} | {r['n']} | {r['max_parallel']} | {r['candidates']} x 2 "
                   f"| {r['start_s']:.1f} | {r['cold_per_min']:.1f} | {r['warm_per_min']:.1f} "
                   f"| {r.get('same_as_local', '-')} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from geak_core.api.errors import GeakError

    try:
        return run(args)
    except GeakError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


def run(args: argparse.Namespace) -> int:
    from geak_core.engine.plugins import get_plugin_manager

    manager = get_plugin_manager()
    spec = manager.spec("suite", "rocm")
    suite = manager.build("suite", "rocm", spec.options() if spec.options else None)
    tasks = [suite.get(t.strip()) for t in args.tasks.split(",") if t.strip()]
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    executors = [e.strip() for e in args.executors.split(",") if e.strip()]
    rows: list[dict[str, Any]] = []
    info = machine()
    batch = 0
    for n in counts:
        local: dict[str, Any] | None = None
        for executor in executors:
            row = measure(executor, n, tasks, args, batch)
            batch += 2 * args.candidates
            if executor == "local":
                local = row
            elif local is not None:
                row["same_as_local"] = "yes" if row["verdicts"] == local["verdicts"] else "NO"
            rows.append(row)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps({"machine": info, "args": vars(args),
                                                           "rows": rows}, indent=2, default=str))
    print(f"{info['date']}, {info['cpus']} CPUs, {info.get('gpu') or 'no GPU'}, torch {info['torch']}, "
          f"triton {info['triton']}, ray {info['ray']}; tasks {args.tasks}")
    print(table(rows))
    return 0 if all(r.get("same_as_local", "yes") == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
