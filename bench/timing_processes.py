"""Is a self-speedup's drift a property of the processes, of the inputs, or of neither?

The judge times the baseline in its timer child and the candidate in the candidate's
child. KernelBench-X references judged against themselves read up to 5 % off on
microsecond cases, every case of a task the same way within one run and the other
way in another run (index_select 0.977 then 1.046 on H200s), while the same calls
timed with both sides in one process (eager against the baseline) agree.

This bench times a task's reference (the references bench's shimmed copy, as both
sides of that bench run it) against itself with the judge's own loop
(``timing_loop.time_case`` over ``timed_calls.TimedSide``, the judge's default loop
settings, the baseline's instruments on both sides, every call sampled), each side
in a spawned worker process that loads the task as the timer child does:

* ``pairs``: every ordered pair of ``--workers`` processes, the other one paused
  while the baseline runs, once with the baseline on seed 1 and the other on a fresh
  random seed (``judge``: the judge's seeds until 2026-11-27, different inputs) and once
  with both on the same fresh seed (``same``: the judge's since);
* ``local``: both sides in worker 0 (as the eager child times).

Each round draws every case's inputs again in every worker. Per process the bench
fits one offset (log speedup of pair (b, o) = a_b - a_o) over all pairs, cases and
rounds, and reports how much of the spread the offsets explain: an offset that holds
across rounds and pairs is the process's; spread they do not explain is the inputs'
or noise. Per arrangement the bench also reports the mean log speedup (``bias_pct``,
with its standard error): the side timed as the baseline against the other, whatever the
process. With ``--pause other`` (the judge's default) only the other side is stopped
while the baseline runs; ``--pause both`` stops each side while the other runs (the
judge's ``pause_baseline``); ``--pause other,both`` times every pair both ways in turn.
On H200s (2026-11-27 and 2026-11-28, the judge's stop) the baseline read 4-8 % slower on
three tasks whose calls wait for the host (5.2 +- 1.2 % over four runs), within 0.7 % on
six without late calls. With ``--pause other,both`` on the same processes (2 x H200,
2026-11-28; fused_masked_select_add_gelu, masked_select, min_gelu, 36 pairings each way):
7.2 +- 5.2 % with only the other side stopped, 2.8 +- 4.9 % with both (95 % intervals).
The judge's lanes read no such difference between the two (docs/benchmarks.md).
``--bind near|far`` starts the workers on the CPUs of the GPU's NUMA node or
of another; ``--hold-us`` makes every busy-wait at least that long.

On 4 x H200 (2026-11-27, three workers, two cases a task, docs/benchmarks.md): offsets
of up to 4 % a process on mse_loss, fused_sum_std, RMSProp and
fused_sigmoid_adaptive_avg_pool2d, explaining most of the spread (mse_loss: 4.4 % rms
-> 0.7 % after them), the same with both sides on one seed as with the judge's two; not
gone with a 200 us busy-wait, on a host of one NUMA node, nor with each side's inputs
at eight places and a random spacer before every call's allocations; with both sides
in one process, one task read 1.03 of itself on every case and round. Nor is it the
cache flush (``--flush``, 4 x H200 the same day; a task's largest offset, four tasks,
one run each): 0.8-2.6 % with no flush at all, 1.2-2.7 % with the flush at a random
place each call, 0.6-3.2 % with a read instead of a write, 1.8-3.3 % with the judge's.
``--module-loading EAGER`` (every module's kernels loaded at the context's start, in one
order; 4 x H200 the same day, one run, three tasks): offsets of at most 0.9 % against 3.3 %
lazily beside it, but no less spread in all, and both sides in one process still 1.02-1.03 on
fused_sum_std: not the module loading alone. ``--fresh-events`` (new CUDA events every block)
has not finished a run yet.
Nor the processes' hash seed and address layout (``--hash-seed 0 --no-aslr``, 2 x H200,
2026-11-28: the three workers at the same heap, C library and stack addresses with the same
string hash, offsets of up to 2.6 % all the same on mse_loss and fused_sum_std). On eig and
spectral_norm_eig (the same day) one case's timing spreads 7-10 % rms with no offset per
process to speak of, with or without glibc's malloc thresholds fixed (``GLIBC_TUNABLES``
in the environment, which the workers inherit). Nor where the host's memory lies
physically: with ``PYTHONMALLOC=malloc GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (250 MiB of
each worker on transparent huge pages, ``anon_huge_kb``) the offsets came and went by GPU
and run as without (2 x H200, 2026-11-28: mse_loss 4.0 / -2.3 / -1.7 % on one GPU, 0.0 /
-0.1 / 0.1 % on the other).

    python bench/timing_processes.py --data .ext/KernelBenchX --tasks index_select,mse_loss --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import secrets
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing_sides import _Remote, serve_pipe, stop_workers  # noqa: E402  (a side in a worker process, as the judge pauses it)


def gpu_numa(index: int) -> int:
    """The NUMA node of GPU ``index`` (as nvidia-smi numbers it); -1 where the host does not
    say."""
    import subprocess

    try:
        bus = subprocess.run(["nvidia-smi", "-i", str(index), "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().lower()
        bus = bus[4:] if len(bus.split(":")[0]) == 8 else bus  # 00000000:18:00.0 -> 0000:18:00.0
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return -1


def node_cpus() -> dict[int, set[int]]:
    """CPUs per NUMA node, from sysfs."""
    found: dict[int, set[int]] = {}
    base = "/sys/devices/system/node"
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if name.startswith("node") and name[4:].isdigit():
            with open(os.path.join(base, name, "cpulist")) as handle:
                cpus: set[int] = set()
                for part in handle.read().strip().split(","):
                    if part:
                        lo, _, hi = part.partition("-")
                        cpus.update(range(int(lo), int(hi or lo) + 1))
                found[int(name[4:])] = cpus
    return found


class MovingFlush:
    """The judge's cache flush (a buffer of ``size`` bytes zeroed before each timed call), each
    call at another place: a random 2 MiB-aligned window of a buffer ``spread`` bytes larger."""

    def __init__(self, size: int, spread: int) -> None:
        import torch

        self.words = size // 4
        self.buffer = torch.empty((size + spread) // 4, dtype=torch.int32, device="cuda")
        self.steps = spread // (2 << 20)

    def zero_(self) -> None:
        start = secrets.randbelow(self.steps + 1) * ((2 << 20) // 4)
        self.buffer[start:start + self.words].zero_()


class ReadFlush:
    """A flush that reads the buffer instead of writing it: it leaves the cache holding clean
    lines, which a timed call evicts without writing them back."""

    def __init__(self, size: int) -> None:
        import torch

        self.buffer = torch.ones(size // 4, dtype=torch.int32, device="cuda")
        self.out = torch.empty((), dtype=torch.int32, device="cuda")

    def zero_(self) -> None:
        import torch

        torch.amax(self.buffer, dim=0, out=self.out)


def make_flush(kind: str, size: int) -> Any:
    """The flush of ``--flush``: ``write`` (the judge's), ``moving``, ``read`` or ``none``."""
    import torch

    if kind == "none":
        return None
    if kind == "moving":
        return MovingFlush(size, 256 << 20)
    if kind == "read":
        return ReadFlush(size)
    return torch.empty(size // 4, dtype=torch.int32, device="cuda")


def layout() -> dict[str, Any]:
    """What makes this process unlike its siblings though it runs the same code: its string
    hash (``PYTHONHASHSEED``), glibc's tunables (``GLIBC_TUNABLES``), Python's allocator
    (``PYTHONMALLOC``), its personality (ASLR off: 0x40000 set), where the heap, the C library
    and the stack start, and how much of its memory lies on transparent huge pages
    (``anon_huge_kb``, from /proc/self/smaps_rollup; None where unreadable)."""
    found: dict[str, Any] = {"hash": hash("geak-core"), "personality": "?",
                             "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
                             "pythonmalloc": os.environ.get("PYTHONMALLOC", ""), "anon_huge_kb": None}
    try:
        with open("/proc/self/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("AnonHugePages:"):
                    found["anon_huge_kb"] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/self/personality") as handle:
            found["personality"] = handle.read().strip()
        with open("/proc/self/maps") as handle:
            for line in handle:
                parts = line.split()
                name = parts[-1] if len(parts) > 5 else ""
                key = "heap" if name == "[heap]" else "stack" if name == "[stack]" else (
                    "libc" if os.path.basename(name).startswith("libc.so") else "")
                if key and key not in found:
                    found[key] = parts[0].split("-")[0]
    except OSError:
        pass
    return found


ADDR_NO_RANDOMIZE = 0x0040000


def set_no_aslr() -> bool:
    """Turn address-space randomisation off for the processes this one starts from now on
    (personality(2): it takes effect at their exec). False where the system refuses."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)
    if current < 0:
        return False
    return libc.personality(current | ADDR_NO_RANDOMIZE) >= 0 and bool(libc.personality(0xFFFFFFFF) & ADDR_NO_RANDOMIZE)


def worker(conn: Any, task_data: dict[str, Any], baseline: str, variant: dict[str, Any]) -> None:
    """Serve one side of ``task_data``'s cases: ``start``, ``block``, ``end``, and ``local``
    (a whole case timed with both sides in this process). ``variant``: ``cpus`` (run on these
    from the start, before CUDA is set up), ``hold_us`` (every busy-wait at least this long),
    ``flush`` (:func:`make_flush`), ``fresh_events`` (new CUDA events every block),
    ``module_loading`` (CUDA_MODULE_LOADING for this process: "" leaves it as it is)."""
    if variant["cpus"]:
        os.sched_setaffinity(0, variant["cpus"])
    if variant["module_loading"]:
        os.environ["CUDA_MODULE_LOADING"] = variant["module_loading"]
    hold_us, fresh_events = float(variant["hold_us"]), bool(variant["fresh_events"])
    import torch
    from geak_evaluator_triton.baseline_timer import instrumented, module_file
    from geak_evaluator_triton.child_jobs import (
        REFERENCE_MODULE,
        _case_table,
        import_file,
        load_harness,
        load_task,
        setup_runtime,
    )
    from geak_evaluator_triton.timed_calls import LocalSide, TimedSide, cycles_per_us
    from geak_evaluator_triton.timing_loop import time_case

    log = setup_runtime()
    task = load_task(task_data)
    harness = load_harness(task)
    cases = {c.name: c for c in _case_table(harness, "full")}
    module = import_file(REFERENCE_MODULE, baseline)
    timed, drain = instrumented(task, module, log)
    flush_bytes = 2 * torch.cuda.get_device_properties(0).L2_cache_size
    flush = make_flush(variant["flush"], flush_bytes)
    cycles = cycles_per_us()

    def make_side() -> TimedSide:
        return TimedSide(harness, timed, flush, cycles, log=log, own_file=module_file(module), sample=True,
                         keep_samples=False)

    side = make_side()

    def block(payload: dict[str, Any]) -> dict[str, Any]:
        if fresh_events:
            side._pairs = []
        answer = side.block(payload["calls"], max(hold_us, payload["hold_us"]))
        if drain is not None:
            drain()
        return answer

    def end(payload: dict[str, Any]) -> dict[str, Any]:
        answer = side.end_case()
        answer.pop("outputs", None)
        return answer

    def local(payload: dict[str, Any]) -> dict[str, Any]:
        base = LocalSide(make_side(), task, cases)
        other = LocalSide(make_side(), task, cases)
        record = time_case(base, other, payload["case"], payload["seeds"][0], payload["seeds"][1],
                           payload["options"], payload["options"]["target_ci"], payload["warmup_ms"])
        if drain is not None:
            drain()
        return {"record": _summary(record)}

    conn.send({"ready": True, "cases": [n for n in cases if n.startswith("perf_")], "layout": layout()})
    serve_pipe(conn, {
        "start": lambda p: side.start_case(task, cases[p["case"]], p["seed"], p["warmup_ms"]),
        "block": block,
        "end": end,
        "local": local,
    })


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    return {"speedup": record["reference_ms"] / record["candidate_ms"],
            "baseline_us": record["reference_ms"] * 1e3, "other_us": record["candidate_ms"] * 1e3,
            "baseline_ci": record["reference_ci"], "other_ci": record["candidate_ci"],
            "repetitions": record["repetitions"], "hold_us": record["hold_us"],
            "late": record["wall_s"]["late.baseline"] + record["wall_s"]["late.candidate"],
            "loop_s": record["wall_s"]["loop"]}


def fit_offsets(rows: list[dict[str, Any]], workers: int) -> tuple[list[float], float, float]:
    """Per-process offsets a_i (sum 0) with log(speedup of (b, o)) ~ a_b - a_o, least squares
    by Gauss-Seidel; (offsets, rms of the log speedups, rms left after the offsets)."""
    offsets = [0.0] * workers
    logs = [(r["baseline"], r["other"], math.log(r["speedup"])) for r in rows]
    for _ in range(200):
        for i in range(workers):
            terms = [(y + offsets[o]) if b == i else (offsets[b] - y) for b, o, y in logs if i in (b, o)]
            if terms:
                offsets[i] = statistics.fmean(terms)
        mean = statistics.fmean(offsets)
        offsets = [a - mean for a in offsets]
    total = math.sqrt(statistics.fmean([y * y for _, _, y in logs])) if logs else 0.0
    left = math.sqrt(statistics.fmean([(y - offsets[b] + offsets[o]) ** 2 for b, o, y in logs])) if logs else 0.0
    return offsets, total, left


def bias(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The mean log speedup over ``rows`` in %, and its standard error: how much slower the
    side timed as the baseline read than the other, whichever processes they were."""
    logs = [math.log(r["speedup"]) for r in rows]
    if len(logs) < 2:
        return (100 * logs[0] if logs else 0.0), 0.0
    return 100 * statistics.fmean(logs), 100 * statistics.stdev(logs) / math.sqrt(len(logs))


def bench_task(task: Any, folder: str, workers: int, rounds: int, case_count: int, options: dict[str, Any],
               out: dict[str, Any], save: Any, variant: dict[str, Any], modes: tuple[str, ...] = ("judge", "same"),
               pauses: tuple[str, ...] = ("other",)) -> None:
    from geak_evaluator_triton.child_pool import task_payload
    from geak_evaluator_triton.timing_loop import time_case
    from kernelbenchx_references import bench_task_of

    judged = bench_task_of(task, folder)
    context = mp.get_context("spawn")
    procs: list[tuple[Any, Any]] = []
    for _ in range(workers):  # started together: their imports and compiles overlap
        mine, theirs = context.Pipe()
        process = context.Process(target=worker, args=(theirs, task_payload(judged), judged.timing_baseline, variant),
                                  daemon=True)
        process.start()
        procs.append((process, mine))
    started = time.perf_counter()
    ready = [conn.recv() for _, conn in procs]
    found: dict[str, Any] = {"start_s": round(time.perf_counter() - started, 1), "rows": [],
                             "layouts": [r.get("layout", {}) for r in ready]}
    print(f"{task.id:32s} workers' layouts {found['layouts']}", flush=True)
    out["tasks"][task.id] = found
    cases = ready[0]["cases"][:case_count]
    pairs = [(b, o) for b in range(workers) for o in range(workers) if b != o]
    try:
        for round_number in range(rounds):
            for case in cases:
                for mode in modes:
                    for b, o in pairs:
                        for pause in pauses:
                            fresh = secrets.randbelow(1 << 30)
                            seeds = (1, fresh) if mode == "judge" else (fresh, fresh)
                            baseline = _Remote(*procs[b], untrusted=False, stoppable=pause == "both")
                            other = _Remote(*procs[o], untrusted=True)
                            try:
                                record = _summary(time_case(baseline, other, case, seeds[0], seeds[1], options,
                                                            options["target_ci"], options["warmup_ms"]))
                            except RuntimeError as exc:
                                found.setdefault("errors", []).append(f"{case} {mode} {pause} {b}-{o}: {exc}")
                                continue
                            found["rows"].append({"round": round_number, "case": case, "mode": mode,
                                                  "pause": pause, "baseline": b, "other": o, **record})
                fresh = secrets.randbelow(1 << 30)
                procs[0][1].send(("local", {"case": case, "seeds": [fresh, fresh], "options": options,
                                            "warmup_ms": options["warmup_ms"]}))
                answer = procs[0][1].recv()
                if "record" in answer:
                    found["rows"].append({"round": round_number, "case": case, "mode": "local", "baseline": 0,
                                          "other": 0, **answer["record"]})
                save()
    finally:
        stop_workers(procs, join_s=10)
    for mode in modes:
        for pause in pauses:
            rows = [r for r in found["rows"] if r["mode"] == mode and r.get("pause", "other") == pause]
            offsets, total, left = fit_offsets(rows, workers)
            mean, error = bias(rows)
            key = mode if pauses == ("other",) else f"{mode}, pause {pause}"
            found[key] = {"offsets_pct": [round(100 * (math.exp(a) - 1), 2) for a in offsets],
                          "rms_pct": round(100 * total, 2), "rms_left_pct": round(100 * left, 2),
                          "bias_pct": round(mean, 2), "bias_se_pct": round(error, 2),
                          "speedups": [round(r["speedup"], 4) for r in rows]}
            print(f"{task.id:32s} {key:18s} offsets % {found[key]['offsets_pct']} rms {found[key]['rms_pct']} % "
                  f"-> {found[key]['rms_left_pct']} % after them; baseline slower by {mean:+.2f} % "
                  f"(+- {error:.2f}) ({len(rows)} timings)", flush=True)
    local = [r["speedup"] for r in found["rows"] if r["mode"] == "local"]
    if local:
        found["local_speedups"] = [round(s, 4) for s in local]
        print(f"{task.id:32s} local  {found['local_speedups']}", flush=True)
    save()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a KernelBench-X checkout")
    parser.add_argument("--tasks", required=True, help="comma-separated task ids")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", type=int, default=2, help="the first this many perf cases of each task")
    parser.add_argument("--bind", choices=("none", "near", "far"), default="none",
                        help="start every worker on the CPUs of the GPU's NUMA node (near), of another node "
                             "(far), or where the system puts it (none)")
    parser.add_argument("--hold-us", type=float, default=0.0, help="every busy-wait at least this long")
    parser.add_argument("--flush", choices=("write", "moving", "read", "none"), default="write",
                        help="the cache flush before each timed call: the judge's (write: a buffer twice the L2 "
                             "zeroed), the same at a random place of a 256 MiB larger buffer each call (moving), "
                             "a read of the buffer (read), none")
    parser.add_argument("--fresh-events", action="store_true", help="new CUDA events for every block")
    parser.add_argument("--module-loading", choices=("", "LAZY", "EAGER"), default="",
                        help="CUDA_MODULE_LOADING in the workers: EAGER loads every module's kernels when the "
                             "context starts, in one order (each process then likely holds the same code at "
                             "the same places); '' leaves the environment's")
    parser.add_argument("--hash-seed", type=int, default=-1,
                        help="PYTHONHASHSEED of every worker (-1: each its own, as the judge's children, which "
                             "run with python -I)")
    parser.add_argument("--no-aslr", action="store_true",
                        help="start the workers with address-space randomisation off (personality(2)), so "
                             "that processes running the same code hold it at the same addresses")
    parser.add_argument("--modes", default="judge,same",
                        help="seed arrangements: judge (the baseline on seed 1, the other on a fresh one: the "
                             "judge's until 2026-11-27), same (both on one fresh seed: the judge's since)")
    parser.add_argument("--pause", default="other",
                        help="who is stopped while the other side runs: other (the judge's default), both "
                             "(pause_baseline), or other,both to time every pair both ways in turn")
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    pauses = tuple(p for p in args.pause.split(",") if p)
    if not modes or set(modes) - {"judge", "same"}:
        parser.error("--modes takes judge, same or judge,same")
    if not pauses or set(pauses) - {"other", "both"}:
        parser.error("--pause takes other, both or other,both")
    from geak_core.engine.store import atomic_write
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.timing_session import loop_options
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite

    options = dict(loop_options(TritonEvaluatorOptions(), None))
    suite = KernelBenchXSuite(KernelBenchXOptions(path=args.data))
    device = int((os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0])
    node = gpu_numa(device)
    nodes = node_cpus()
    cpus: list[int] = []
    if args.bind == "near" and node in nodes:
        cpus = sorted(nodes[node])
    elif args.bind == "far":
        others = [n for n in nodes if n != node]
        cpus = sorted(nodes[others[0]]) if others else []
    if args.hash_seed >= 0:
        os.environ["PYTHONHASHSEED"] = str(args.hash_seed)  # spawned workers inherit the environment
    else:
        os.environ.pop("PYTHONHASHSEED", None)
    no_aslr = set_no_aslr() if args.no_aslr else False
    if args.no_aslr and not no_aslr:
        print("--no-aslr: personality(2) refused; the workers' addresses stay random", flush=True)
    variant = {"cpus": cpus, "hold_us": args.hold_us, "flush": args.flush, "fresh_events": args.fresh_events,
               "module_loading": args.module_loading, "hash_seed": args.hash_seed, "no_aslr": no_aslr}
    out: dict[str, Any] = {"options": options, "workers": args.workers, "rounds": args.rounds, "bind": args.bind,
                           "modes": list(modes), "pause": list(pauses),
                           "gpu_node": node, "nodes": {n: len(c) for n, c in nodes.items()}, **variant, "tasks": {}}
    print(f"GPU {device} on NUMA node {node}; nodes {out['nodes']}; bind {args.bind}: {len(cpus)} CPUs; "
          f"hold at least {args.hold_us} us; flush {args.flush}; fresh events {args.fresh_events}; "
          f"CUDA_MODULE_LOADING {args.module_loading or '(as set)'}; hash seed {args.hash_seed}; ASLR "
          f"{'off' if no_aslr else 'on'}", flush=True)

    def save() -> None:
        if args.json_out:
            atomic_write(args.json_out, json.dumps(out, indent=1), fsync=False)

    with tempfile.TemporaryDirectory() as folder:
        for name in args.tasks.split(","):
            bench_task(suite.get(name), folder, args.workers, args.rounds, args.cases, options, out, save, variant,
                       modes, pauses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
