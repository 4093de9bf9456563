"""Judge GEAK-eval's ROCm_v1 expert kernels with this project's judge, and time them against ours.

Two judgements per task of the ``rocm`` suite by the ``triton`` evaluator:

* the original as candidate: the original file's kernel part (the text before
  its line of 146 ``#``, unchanged) is judged like any candidate, against our
  reference: verdict, failed stage and reason. On a GPU its speedup, our
  reference's latency over the original's, is the original/ours speed ratio.
  Where the port rewrote more than test-only imports, the ported kernel part
  (the module timed below) is judged too, as a third candidate;
* the baseline option: with the suite option ``baseline`` set to the same
  folder, our reference is judged as the candidate and timed against the
  ported original (``Task.timing_baseline``): original/ours = 1 / its speedup.

Speedups are sums of latencies over the timed cases, as in GEAK-eval. A task is
within range when the baseline option's ratio (else the first) lies in
[0.9, 1.1]. Where the port changed nothing that runs, the two ratios time the
same kernels and should agree: a check that the judge timed the original.
Results go to ``--json`` (and the table to the same name ending in ``.md``)
after every task, atomically, so a run cut short keeps what it measured; the
table is also printed at the end. Tasks are judged ``--group`` (2) at a time,
side by side in the judge's slots. ``--judgements baseline`` judges only the
baseline option (for an original that autotunes for minutes at every
correctness shape, which its judgement as a candidate must sit through). With ``--limit-s`` no group starts after
that many seconds; the tasks left are listed as not run. ``--mode interpreter`` is a
CPU smoke run (correctness only).

    python bench/rocm_originals.py --rocm-v1 .ext/GEAK-eval/geak_eval/data/ROCm/data/ROCm_v1 \\
        --tasks test_add_kernel,softmax --json out.json --limit-s 450
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

LOW, HIGH = 0.9, 1.1


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merge", nargs="+", default=[], metavar="JSON",
                        help="print (and with --json write) one table of earlier --json files instead: "
                             "per task the last file's finished row, with the file it came from")
    parser.add_argument("--rocm-v1", default="",
                        help="GEAK-eval's geak_eval/data/ROCm/data/ROCm_v1 folder")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--json", dest="json_out", default="",
                        help="write results here (and the table beside it, as .md)")
    parser.add_argument("--limit-s", type=float, default=0.0,
                        help="start no judgement after this many seconds (0: no limit)")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--seeds", default="", help="comma-separated seeds replacing the tasks' own")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--group", type=int, default=2,
                        help="tasks judged side by side (their judgements share the judge's slots)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per judge child")
    parser.add_argument("--judgements", default="both", choices=["both", "baseline"],
                        help="baseline: only our reference timed against the ported original (for an "
                             "original that autotunes at every correctness shape for minutes)")
    return parser.parse_args(argv)


def _build(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(our suite, the suite with the baseline option, the evaluator)."""
    from geak_core.cli.cli_eval import build_evaluator
    from geak_core.engine.plugins import get_plugin_manager

    manager = get_plugin_manager()
    spec = manager.spec("suite", "rocm")
    ours = manager.build("suite", "rocm", spec.options(baseline=""))
    baseline = manager.build("suite", "rocm", spec.options(baseline=os.path.abspath(args.rocm_v1)))
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()] or None
    evaluator = build_evaluator("triton", {
        "mode": args.mode, "workers": args.workers or None, "timeout_s": args.timeout,
        "reference_timeout_s": max(args.timeout, 300.0), "seeds": seeds,
        "speedup_method": "sum",  # GEAK-eval's sum of latencies (the judge's default is mean_ratio)
    })
    return ours, baseline, evaluator


def verdict(result: Any) -> str:
    """The table's short form of a verdict (``verdict_line`` of geak-core eval is the long one)."""
    if "skipped" in result.flags:
        return "skipped"
    if "judge_error" in result.flags:
        return "judge error"
    if result.correct:
        return "correct" if result.failed_stage is None else f"correct, {result.failed_stage} failed"
    return f"{'wrong' if result.call_ok else 'failed'} ({result.failed_stage})"


def task_jobs(ours: Any, baseline: Any, judgements: str = "both") -> tuple[dict[str, Any], list[Any]]:
    """One task's row (judgements still empty) and the jobs that fill it.

    ``ours``: the task timed against our reference; ``baseline``: the same task timed
    against the ported original. The original is judged on ``ours``, so its verdict does
    not depend on its port running at every timed shape. ``judgements="baseline"``: only
    the baseline option's judgement."""
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate
    from geak_suite_rocm.originals import OriginalError, kernel_part

    described = baseline.extra["timing_baseline"]
    row: dict[str, Any] = {
        "task": ours.id,
        "original": described["original"],
        "ported_module": described["module"],
        "ports": described["ports"],
        "problem": described["problem"],
        "original_judged": None,
        "ported_judged": None,
        "reference_vs_original": None,
        "judgements": judgements,
    }
    if described["problem"]:
        row["status"] = "original unusable"
        return row, []
    source = Path(described["original"])
    try:
        original_code, _ = kernel_part(source.read_text(encoding="utf-8"), str(source))
    except (OSError, OriginalError) as exc:  # changed since the suite read it
        row.update(status="original unusable", problem=str(exc))
        return row, []
    reference_code = Path(ours.reference).read_text(encoding="utf-8")
    jobs = [
        EvalJob(ours, Candidate(id=f"original:{ours.id}", task_id=ours.id, code=original_code,
                                origin="file")),
        EvalJob(baseline, Candidate(id=f"reference:{ours.id}", task_id=ours.id,
                                    code=reference_code, origin="file")),
    ]
    if judgements == "baseline":
        jobs = jobs[1:]
    elif any(p["rule"] != "test_only_import" for p in described["ports"]):
        ported = Path(described["module"]).read_text(encoding="utf-8")
        jobs.append(EvalJob(ours, Candidate(id=f"ported:{ours.id}", task_id=ours.id, code=ported,
                                            origin="file")))
    row["status"] = "judging"
    return row, jobs


KEYS = {"original": "original_judged", "reference": "reference_vs_original", "ported": "ported_judged"}


def record(row: dict[str, Any], job: Any, result: Any) -> bool:
    """File one judgement in its task's row; True once the row has all of its judgements."""
    from geak_core.cli.cli_eval import result_record

    row[KEYS[job.candidate.id.split(":", 1)[0]]] = {**result_record(job.task, result), "verdict": verdict(result)}
    if row.get("judgements") == "baseline":
        wanted = ["reference_vs_original"]
    else:
        wanted = ["original_judged", "reference_vs_original"] + (
            ["ported_judged"] if any(p["rule"] != "test_only_import" for p in row["ports"]) else [])
    if any(row[k] is None for k in wanted):
        return False
    original, reference = row["original_judged"], row["reference_vs_original"]
    as_candidate = [j for j in (original, row["ported_judged"]) if j and j["correct"] and j["speedup"]]
    row["ratio_original_as_candidate"] = as_candidate[0]["speedup"] if as_candidate else None
    timed = reference["speedup"] if reference["correct"] else None
    row["ratio_baseline_option"] = 1.0 / timed if timed else None
    row["ratio"] = row["ratio_baseline_option"] or row["ratio_original_as_candidate"]
    row["within"] = None if row["ratio"] is None else LOW <= row["ratio"] <= HIGH
    row["status"] = "done"
    return True


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if r["status"] == "done"]
    return {
        "tasks": len(rows),
        "judged": len(done),
        "original_correct": sorted(r["task"] for r in done if (r["original_judged"] or {}).get("correct")),
        "original_not_correct": sorted(r["task"] for r in done
                                       if r["original_judged"] and not r["original_judged"]["correct"]),
        "ported_correct": sorted(r["task"] for r in done
                                 if r["ported_judged"] and r["ported_judged"]["correct"]),
        "within": sorted(r["task"] for r in done if r["within"] is True),
        "outside": sorted(r["task"] for r in done if r["within"] is False),
        "not_timed": sorted(r["task"] for r in done if r["within"] is None),
        "not_judged": {r["task"]: r.get("problem") or r["status"] for r in rows if r["status"] != "done"},
    }


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _short(text: str | None, width: int = 90) -> str:
    line = (text or "").splitlines()[0] if text else ""
    return (line[: width - 1] + "…" if len(line) > width else line).replace("|", "/")


def markdown(rows: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    if environment["mode"] == "merged":
        title = f"ROCm_v1 originals judged on {environment['device']}, {environment['torch']}"
    else:
        title = (f"ROCm_v1 originals judged on {environment['device']} ({environment['mode']}), "
                 f"torch {environment.get('torch', '?')}, triton {environment.get('triton', '?')}")
    lines = [
        title,
        "",
        "| task | original as candidate | why not correct | ported original | "
        "original/ours (as candidate) | original/ours (baseline option) | within [0.9, 1.1] | "
        "ports |" + (" from |" if environment["mode"] == "merged" else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|" if environment["mode"] == "merged" else ""),
    ]
    source = (lambda row: f" {row.get('source', '-')} |") if environment["mode"] == "merged" else (lambda row: "")
    for row in rows:
        ports = ", ".join(sorted({p["rule"] for p in row["ports"]})) or "-"
        if row["status"] != "done":
            judged = row.get("original_judged")
            if row["status"] == "judging" and judged:  # cut short after the original's verdict
                ratio = judged["speedup"] if judged["correct"] else None
                lines.append(f"| {row['task']} | {judged['verdict']} | "
                             f"{'-' if judged['correct'] else _short(judged['reason'])} | - | {_ratio(ratio)} "
                             f"| not finished | - | {ports} |{source(row)}")
                continue
            lines.append(f"| {row['task']} | {row['status']} | {_short(row.get('problem'))} | - | - "
                         f"| - | - | {ports} |{source(row)}")
            continue
        judged, reference = row["original_judged"], row["reference_vs_original"]
        if judged is None:  # --judgements baseline
            judged = {"verdict": "not judged", "correct": True, "failed_stage": None, "reason": ""}
        why = "" if judged["correct"] and not judged["failed_stage"] else _short(judged["reason"])
        if not reference["correct"] or reference["failed_stage"]:
            why += ("; " if why else "") + "timing ours against it: " + _short(
                reference["reason"] or reference["verdict"], 60)
        within = {True: "yes", False: "NO", None: "-"}[row["within"]]
        ported = row["ported_judged"]
        ported_cell = "-" if ported is None else ported["verdict"] + (
            "" if ported["correct"] else f": {_short(ported['reason'], 60)}")
        lines.append(
            f"| {row['task']} | {judged['verdict']} | {why or '-'} | {ported_cell} | "
            f"{_ratio(row['ratio_original_as_candidate'])} | {_ratio(row['ratio_baseline_option'])} | "
            f"{within} | {ports} |{source(row)}"
        )
    if environment["mode"] == "interpreter":
        lines += ["", "Interpreter mode: kernels run on the CPU, so no speed is measured."]
    lines += ["", "original/ours: our reference's latency over the original's (sums over the timed "
              "cases); above 1 the original is faster."]
    return "\n".join(lines)


def merge(paths: list[str], json_out: str = "") -> int:
    """One table of several runs' results: per task, the finished row of the last file that has
    one (a row cut short by a time limit does not replace a finished one, but does replace an
    earlier row cut short: it may hold more of the task's judgements), its file named."""
    import json

    rows: dict[str, dict[str, Any]] = {}
    devices: set[str] = set()
    versions: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        environment = data["environment"]
        devices.add(f"{environment['device']} ({environment['mode']})")
        versions.add(f"torch {environment.get('torch', '?')}, triton {environment.get('triton', '?')}")
        for row in data["tasks"]:
            if row["status"] == "done" or rows.get(row["task"], {}).get("status") != "done":
                rows[row["task"]] = {**row, "source": os.path.basename(path)}
    merged = [rows[task] for task in sorted(rows)]
    environment = {"device": ", ".join(sorted(devices)), "mode": "merged",
                   "torch": ", ".join(sorted(versions)), "sources": [os.path.basename(p) for p in paths]}
    if json_out:
        _write(json_out, environment, merged)
    print(markdown(merged, environment))
    return 0


def _write(path: str, environment: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    import json

    from geak_core.engine.store import atomic_write

    data = {"environment": environment, "tasks": rows, "summary": summary(rows)}
    atomic_write(path, json.dumps(data, indent=2, default=str) + "\n")
    atomic_write(str(Path(path).with_suffix(".md")), markdown(rows, environment) + "\n")


def _environment(args: argparse.Namespace, evaluator: Any) -> dict[str, Any]:
    runtime = evaluator.runtime()
    environment: dict[str, Any] = {
        "mode": runtime.mode,
        "device": runtime.device_name,
        "workers": len(runtime.slots),
        "python": platform.python_version(),
        "rocm_v1": os.path.abspath(args.rocm_v1),
        "seeds": args.seeds or "the tasks' own",
        "limit_s": args.limit_s,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    try:
        import torch
        import triton

        environment.update(torch=torch.__version__, triton=triton.__version__)
    except ImportError:
        pass
    return environment


def main(argv: list[str] | None = None) -> int:
    from geak_core.api.errors import GeakError

    args = _parse(argv)
    if args.merge:
        return merge(args.merge, args.json_out)
    if not args.rocm_v1:
        print("error: --rocm-v1 is required (or --merge)", file=sys.stderr)
        return 2
    try:
        ours_suite, baseline_suite, evaluator = _build(args)
        wanted = [t for t in args.tasks.split(",") if t.strip()]
        tasks = [ours_suite.get(t) for t in wanted] if wanted else ours_suite.tasks()
        baseline_suite.tasks()  # reads the folder: an unusable one is refused here
    except (GeakError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        environment = _environment(args, evaluator)
        # Tasks are judged --group at a time, their judgements side by side in the judge's
        # slots (timing stays one at a time per GPU); each row is written once complete.
        for first in range(0, len(tasks), max(1, args.group)):
            group = tasks[first:first + max(1, args.group)]
            if args.limit_s and time.monotonic() - started >= args.limit_s:
                rows += [{"task": task.id, "status": "not run: time limit", "ports": [],
                          "problem": f"--limit-s {args.limit_s:g} reached"} for task in group]
                continue
            jobs, owner = [], {}
            for task in group:
                row, task_jobs_ = task_jobs(task, baseline_suite.get(task.id), args.judgements)
                rows.append(row)
                for job in task_jobs_:
                    owner[id(job)] = row
                jobs += task_jobs_
            for job, result in evaluator.evaluate_many(jobs):
                from geak_core.cli.cli_eval import verdict_line

                print(verdict_line(job.task, result), file=sys.stderr, flush=True)
                row = owner[id(job)]
                if record(row, job, result):
                    judged = (row["original_judged"] or {}).get("verdict", row["status"])
                    print(f"{row['task']}: original {judged}, original/ours {_ratio(row.get('ratio'))}, "
                          f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
                environment["total_s"] = round(time.monotonic() - started, 1)
                if args.json_out:
                    _write(args.json_out, environment, rows)
    finally:
        evaluator.close()
    environment["total_s"] = round(time.monotonic() - started, 1)
    if args.json_out:
        _write(args.json_out, environment, rows)
    print(markdown(rows, environment))
    return 0


if __name__ == "__main__":
    sys.exit(main())
