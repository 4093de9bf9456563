"""Judge a published TritonBench-G output file end to end, by TritonBench's own protocol.

TritonBench's ``LLM_generated/**/*.jsonl`` files hold one model reply per task
(``predict``) with the task's reference code (``label``). This script reads
such a file as ``geak-core eval --suite tritonbench --candidates FILE`` does
(the suite finds each record's task from its label and the code in its reply),
judges every record with the project's own evaluator, and prints GEAK's
figures over the benchmark's tasks (184 in the release):

* call accuracy: records whose code runs (``call_ok``: imports, compiles,
  keeps the entry points the test calls and runs the task's test without an
  error), over the tasks;
* execution accuracy: records that run and are correct (``correct``), over
  the tasks;
* speedups of the correct records, where measured (GPU only): the judge's
  ``speedup`` (GEAK-eval's sum of reference latencies over the candidate's),
  their mean (GEAK's figure), geometric mean and median.

A record the judge could not decide counts as neither (a task the suite cannot
use, a task skipped on this device, a judge error) and is listed by kind.

Results go to ``OUT/results.jsonl`` as each record is decided: one JSON line
per record (the ``geak-core eval --json`` fields plus the record's line number),
written by a single append and flushed to disk, so a time limit or a kill loses
only the records in flight. Running the same command again with the same
``--out`` skips the records already there and judges the rest; the summary
(``OUT/summary.json``, replaced atomically after every record) always covers
every line of the file.
A folder holding results of other records (by content) or of the other
protocol is refused; the folder may be copied elsewhere and resumed there.

Records are scheduled as ``geak-core eval`` schedules them (``evaluate_many``: the
references computed ahead, a task's first record before its others while other tasks
have work).
``--limit-s N``: no record starts after N seconds; the records already running
finish (each bounded by ``--timeout`` per child process).

On the GPU (speedups measured)::

    python bench/tritonbench_published.py --data .ext/TritonBench/data \\
        --perf .ext/GEAK-eval/geak_eval/data/TritonBench/performance_metrics/perf_G/golden_metrics \\
        --records .ext/TritonBench/LLM_generated/Bench_G_general_purpose/output_gpt-4o_comp.jsonl \\
        --out runs/tb-gpt4o --limit-s 300 --timeout 60

On the CPU (``TRITON_INTERPRET=1``, correctness only; a smoke test on small data)::

    python bench/tritonbench_published.py --data plugins/suite_tritonbench/tests/fixtures/TritonBench/data \\
        --records outputs.jsonl --out /tmp/tb --mode interpreter
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
UNDECIDED = ("skipped", "judge_error")  # flags of verdicts that say nothing about the code


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True,
                        help="TritonBench data/ folder (or a TritonBench_G_v1/ task folder)")
    parser.add_argument("--perf", default="",
                        help="folder of <name>_perf.py scripts (default: found beside the data)")
    parser.add_argument("--json", dest="instructions", default="",
                        help="instruction JSON (default: TritonBench_G_v1.json beside the tasks)")
    parser.add_argument("--records", required=True, help="a published output file (.jsonl)")
    parser.add_argument("--out", required=True, help="folder for results.jsonl and summary.json")
    parser.add_argument("--protocol", default="published", choices=["published", "strict"])
    parser.add_argument("--limit-s", type=float, default=0.0,
                        help="start no record after this many seconds (0: no limit)")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per child process (reference, candidate, timing)")
    parser.add_argument("--workers", type=int, default=0,
                        help="interpreter workers, or GPUs to use (0: the judge's default)")
    parser.add_argument("--candidates-per-gpu", type=int, default=0,
                        help="candidates checked at once on one GPU (0: the judge's default)")
    return parser.parse_args(argv)


# -- results file ---------------------------------------------------------------


def read_results(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a results file; a line cut short by a kill is dropped."""
    if not path.exists():
        return []
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "candidate" in record:
            kept.append(record)
    return kept


class ResultsFile:
    """``results.jsonl``, one line per decided record, each appended whole and synced."""

    def __init__(self, path: Path) -> None:
        from geak_core.engine.store import atomic_write

        self.path = path
        self.records = read_results(path)
        # a line cut short by an earlier kill would spoil the next append: keep whole lines only
        atomic_write(str(path), "".join(json.dumps(r) + "\n" for r in self.records))
        self.done = {r["candidate"] for r in self.records}

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record) + "\n").encode("utf-8")
        handle = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(handle, line)
            os.fsync(handle)
        finally:
            os.close(handle)
        self.records.append(record)
        self.done.add(record["candidate"])


# -- judging ----------------------------------------------------------------------


def _line_number(candidate_id: str) -> int | None:
    tail = candidate_id.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def _record(task: Any, result: Any) -> dict[str, Any]:
    from geak_core.cli.cli_eval import result_record

    record = result_record(task, result)
    record["line"] = _line_number(result.candidate_id)
    record["phases"] = dict(result.phases)  # where the judge's time went (docs/evaluator.md)
    return record


class Session:
    """One run over a records file: the results so far, and the summary kept up to date."""

    def __init__(self, out: Path, identity: dict[str, str], records_file: str, tasks: int) -> None:
        self.results = ResultsFile(out / RESULTS)
        self.summary_path = out / SUMMARY
        self.header = {"records_file": os.path.abspath(records_file), **identity}
        self.tasks = tasks
        # wall_s: seconds since this run began, as of its last result (the run, not the file)
        self.run = {"records": 0, "already_judged": 0, "judged_now": 0, "not_started": 0, "wall_s": 0.0}
        self.began = time.monotonic()

    def record(self, task: Any, result: Any) -> None:
        from geak_core.cli.cli_eval import verdict_line

        self.results.append(_record(task, result))
        self.run["judged_now"] += 1
        self.run["wall_s"] = round(time.monotonic() - self.began, 1)
        print(verdict_line(task, result), flush=True)
        self.save()

    def summary(self) -> dict[str, Any]:
        return {**summarize(self.results.records, self.tasks), **self.header, "run": dict(self.run)}

    def save(self) -> None:
        """The summary of every result so far (replaced atomically after each record)."""
        from geak_core.engine.store import atomic_write

        atomic_write(str(self.summary_path), json.dumps(self.summary(), indent=2) + "\n")


def judge(args: argparse.Namespace, suite: Any, session: Session) -> None:
    """Judge every record not yet in the session's results, in file order."""
    from geak_core.api.components import EvalJob
    from geak_core.cli.cli_eval import build_evaluator, entries_from_jsonl

    started = time.monotonic()
    entries = entries_from_jsonl(args.records, suite)
    todo = [e for e in entries if e.candidate.id not in session.results.done]
    session.run.update(records=len(entries), already_judged=len(entries) - len(todo))
    session.save()
    for entry in [e for e in todo if e.verdict is not None]:
        session.record(entry.task, entry.verdict)
    queue = [e for e in todo if e.verdict is None]
    if not queue:
        return
    evaluator = build_evaluator("triton", {
        "mode": args.mode, "timeout_s": args.timeout, "reference_timeout_s": args.timeout,
        "workers": args.workers or None, "candidates_per_gpu": args.candidates_per_gpu or None,
        # GEAK-eval's protocol: its speedup sums latencies (the judge's default is the paper's mean_ratio)
        "speedup_method": "sum",
    })
    deadline = started + args.limit_s if args.limit_s > 0 else math.inf
    jobs = [EvalJob(e.task, e.candidate) for e in queue]
    left = {id(job) for job in jobs}
    try:
        # `geak-core eval`'s path (evaluate_many: prefetched references, its scheduling),
        # with a start deadline.
        for job, result in evaluator.evaluate_many(jobs, may_start=lambda: time.monotonic() < deadline):
            left.discard(id(job))
            session.record(job.task, result)
    finally:
        evaluator.close()
        session.run["not_started"] = len(left)
        session.run["wall_s"] = round(time.monotonic() - session.began, 1)
        session.save()


# -- figures ------------------------------------------------------------------------


def benchmark_tasks(suite: Any) -> set[str]:
    """Every task of the benchmark: those the suite judges and those it cannot use."""
    return {t.id for t in suite.tasks()} | set(suite.unusable())


def summarize(records: list[dict[str, Any]], tasks: int) -> dict[str, Any]:
    """GEAK's figures over the benchmark's tasks, and the same over the decided records."""
    decided = [r for r in records if not set(r["flags"]) & set(UNDECIDED)]
    call_ok = sum(bool(r["call_ok"]) for r in decided)
    correct = sum(bool(r["correct"]) for r in decided)
    denominator = max(tasks, len(records))
    speedups = [r["speedup"] for r in decided if r["correct"] and r["speedup"] is not None]
    flags = Counter(f for r in records for f in r["flags"])
    stages = Counter(r["failed_stage"] for r in decided if r["failed_stage"])
    return {
        "tasks": tasks,
        "records": len(records),
        "decided": len(decided),
        "call_ok": call_ok,
        "correct": correct,
        "call_accuracy": call_ok / denominator if denominator else None,
        "execution_accuracy": correct / denominator if denominator else None,
        "call_accuracy_of_decided": call_ok / len(decided) if decided else None,
        "execution_accuracy_of_decided": correct / len(decided) if decided else None,
        "unusable_task": flags["unusable_task"],
        "skipped": flags["skipped"] - flags["unusable_task"],
        "judge_errors": flags["judge_error"],
        "failed_stages": dict(sorted(stages.items())),
        "flags": dict(sorted(flags.items())),
        "speedups_measured": len(speedups),
        "speedup_mean": statistics.fmean(speedups) if speedups else None,
        "speedup_geomean": statistics.geometric_mean(speedups) if speedups else None,
        "speedup_median": statistics.median(speedups) if speedups else None,
    }


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def report(summary: dict[str, Any]) -> str:
    s, run = summary, summary["run"]
    lines = [
        "",
        f"{s['records']} of the file's {run['records']} records have a result "
        f"({run['already_judged']} from an earlier run, {run['judged_now']} from this one); "
        f"{run['not_started']} not started (time limit: run again with the same --out)",
        f"call accuracy {_percent(s['call_accuracy'])} ({s['call_ok']}/{max(s['tasks'], s['records'])})"
        f"  execution accuracy {_percent(s['execution_accuracy'])} "
        f"({s['correct']}/{max(s['tasks'], s['records'])}), over the benchmark's {s['tasks']} tasks",
        f"of the {s['decided']} decided records: call {_percent(s['call_accuracy_of_decided'])}"
        f"  exec {_percent(s['execution_accuracy_of_decided'])}",
        f"not decided: {s['unusable_task']} unusable task(s), {s['skipped']} skipped here, "
        f"{s['judge_errors']} judge error(s)",
    ]
    if s["speedups_measured"]:
        lines.append(f"speedup of {s['speedups_measured']} correct record(s): mean "
                     f"{_times(s['speedup_mean'])}  geomean {_times(s['speedup_geomean'])}  "
                     f"median {_times(s['speedup_median'])}")
    else:
        lines.append("speedup: not measured (no correct record was timed; timing needs a GPU)")
    if s["failed_stages"]:
        lines.append("failed stages: " + ", ".join(f"{k} {v}" for k, v in s["failed_stages"].items()))
    return "\n".join(lines)


def _identity(args: argparse.Namespace) -> dict[str, str]:
    """What results may be resumed for: the records (by content) and the protocol."""
    from geak_core.api.errors import InputError

    try:
        digest = hashlib.sha256(Path(args.records).read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(f"--records {args.records}: cannot read: {exc.strerror}") from None
    return {"records_sha256": digest, "protocol": args.protocol}


def _check_same_run(summary: Path, identity: dict[str, str]) -> None:
    """Results are only resumed for the same records judged by the same protocol."""
    from geak_core.api.errors import InputError

    if not summary.exists():
        return
    earlier = json.loads(summary.read_text(encoding="utf-8"))
    for key, value in identity.items():
        if earlier.get(key) not in (None, value):
            raise InputError(f"{summary}: this folder holds results for another {key} "
                             f"({earlier.get(key)!r}, not {value!r}); choose another --out")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from geak_core.api.errors import GeakError
    from geak_core.engine.plugins import get_plugin_manager
    from geak_suite_tritonbench.suite import TritonBenchOptions

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        options = TritonBenchOptions(path=os.path.abspath(args.data),
                                     perf_scripts=os.path.abspath(args.perf) if args.perf else "",
                                     json=os.path.abspath(args.instructions) if args.instructions else "",
                                     protocol=args.protocol)
        identity = _identity(args)
        _check_same_run(out / SUMMARY, identity)
        suite = get_plugin_manager().build("suite", "tritonbench", options)
        session = Session(out, identity, args.records, len(benchmark_tasks(suite)))
        judge(args, suite, session)
    except GeakError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(report(session.summary()))
    print(f"results: {out / RESULTS}  summary: {out / SUMMARY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
