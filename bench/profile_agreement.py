"""Does a profiler's measured fraction of peak agree with the judge's roofline figure?

For each candidate file (a suite's references, or the records of a published output file), the
judge judges it as ``geak-core eval`` does; each correct, timed one is then profiled as
``geak-core profile`` does (``engine.profiling.profile_candidate``: the judge's ``profile()``
on the largest timed case, the diagnosis read from the counters), with one judge for all, so
every profile after the first is warm. Per candidate: the judge's bound and roofline fraction
for the profiled case (bytes or FLOPs from the task's formulas over the judge's latency,
against the hardware profile's peak), the profiler's class and its DRAM and compute fractions
(the tool's own percentages of peak where it reads them), their relative difference on the
judge's bound, and the profile's seconds.

Targets (``docs/profilers.md``): a class and counters for every profiled candidate; where the
judge computes a roofline fraction, the profiler's fraction on the same bound within 15 %
(relative) of it for at least 80 % of them; a warm profile (every one but the first) at most
15 s at the median.

Results go to ``--json`` after every candidate (rewritten atomically); the same command run
again skips the candidates already there. ``--limit-s N`` starts no profile after N seconds.
``--table OUT`` prints the markdown table of a file.

On the GPU machine::

    python bench/profile_agreement.py --suite rocm --profiler ncu --references \\
        --json bench/results/profile-rocm.json
    python bench/profile_agreement.py --suite tritonbench --profiler ncu \\
        --records .ext/TritonBench/LLM_generated/Bench_G_general_purpose/output_gpt-4o_comp.jsonl \\
        --json bench/results/profile-gpt4o.json --limit-s 500

On the CPU (``TRITON_INTERPRET=1``) nothing is timed, so nothing is profiled: each row says
why (a smoke test of the script)::

    TRITON_INTERPRET=1 python bench/profile_agreement.py --suite rocm --mode interpreter --profiler ncu \\
        --references --tasks test_add_kernel --json /tmp/p.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

AGREEMENT = 0.15  # relative difference allowed between the two fractions
WARM_TARGET_S = 15.0


def _write_json(path: str, data: dict[str, Any]) -> None:
    from geak_core.engine.store import atomic_write

    atomic_write(path, json.dumps(data, indent=2, default=str))


def judge_fraction(result: Any, case: str) -> tuple[str | None, float | None]:
    """The judge's bound and roofline fraction for ``case`` of verdict ``result``."""
    shape = next((s for s in result.shapes if s.case == case), None)
    if shape is None:
        return None, None
    return shape.bound, shape.roofline_fraction


def compare(row: dict[str, Any]) -> None:
    """Fill ``row``'s relative difference between the profiler's fraction on the judge's
    bound and the judge's own fraction (None where either is missing)."""
    bound, fraction = row.get("judge_bound"), row.get("judge_fraction")
    measured = row.get("dram_fraction") if bound == "memory" else row.get("compute_fraction")
    row["profiler_fraction"] = measured
    if bound in ("memory", "compute") and fraction and measured is not None:
        row["relative_difference"] = round(abs(measured - fraction) / fraction, 4)
        row["agrees"] = row["relative_difference"] <= AGREEMENT
    else:
        row["relative_difference"] = None
        row["agrees"] = None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    profiled = [r for r in rows if r.get("bound")]
    compared = [r for r in rows if r.get("agrees") is not None]
    warm = [r["seconds"] for r in rows if r.get("bound") and not r.get("first")]
    return {
        "candidates": len(rows),
        "correct": sum(1 for r in rows if r.get("correct")),
        "profiled_with_class": len(profiled),
        "skipped": sum(1 for r in rows if (r.get("error") or "").startswith("profile skipped")),
        "failed": sum(1 for r in rows if r.get("correct") and r.get("error")
                      and not r["error"].startswith("profile skipped")),
        "compared": len(compared),
        "agree": sum(1 for r in compared if r["agrees"]),
        "agree_share": round(sum(1 for r in compared if r["agrees"]) / len(compared), 4) if compared else None,
        "warm_median_s": round(statistics.median(warm), 2) if warm else None,
        "targets": {"agreement": AGREEMENT, "agree_share": 0.8, "warm_median_s": WARM_TARGET_S},
    }


def table(path: str) -> str:
    data = json.loads(open(path, encoding="utf-8").read())
    lines = ["| task | correct | case | judge bound, fraction | profiler class | DRAM | compute | "
             "difference | seconds | error |", "|---|---|---|---|---|---|---|---|---|---|"]

    def pct(x: Any) -> str:
        return f"{x:.1%}" if isinstance(x, (int, float)) else "-"

    for r in data["rows"]:
        judge = f"{r.get('judge_bound') or '-'}, {pct(r.get('judge_fraction'))}"
        difference = pct(r.get("relative_difference"))
        error = (r.get("error") or "").replace("|", "/")[:80]
        lines.append(f"| {r['task']} | {'yes' if r.get('correct') else 'no'} | {r.get('case') or '-'} | {judge} | "
                     f"{r.get('bound') or '-'} | {pct(r.get('dram_fraction'))} | {pct(r.get('compute_fraction'))} | "
                     f"{difference} | {r.get('seconds', 0):.1f} | {error} |")
    s = data.get("summary") or summarize(data["rows"])
    lines.append("")
    lines.append(f"{s['profiled_with_class']} of {s['correct']} correct profiled with a class; "
                 f"{s['agree']} of {s['compared']} within {AGREEMENT:.0%} of the judge's fraction "
                 f"({pct(s['agree_share'])}); warm median {s['warm_median_s']} s")
    return "\n".join(lines)


def reference_entries(suite_name: str, options: tuple[str, ...], names: list[str]) -> list[Any]:
    """Each task's own reference file as a candidate of that task (``names``: those only)."""
    from pathlib import Path
    from types import SimpleNamespace

    from geak_core.api.model import Candidate
    from geak_core.cli.cli_options import build_with_options

    suite = build_with_options("suite", suite_name, options, "--suite-option")
    tasks = [suite.get(n) for n in names] if names else suite.tasks()
    return [SimpleNamespace(task=t, candidate=Candidate(id=f"reference:{t.id}", task_id=t.id,
                                                        code=Path(t.reference).read_text(encoding="utf-8"),
                                                        origin="file"))
            for t in tasks if t.reference]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="rocm")
    parser.add_argument("--suite-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--paths", nargs="*", default=[], help="candidate files or folders (named for their task)")
    parser.add_argument("--records", help="a JSONL of candidate records, as eval --candidates reads")
    parser.add_argument("--references", action="store_true",
                        help="each task's own reference as its candidate (the suite's tasks, or --tasks)")
    parser.add_argument("--tasks", nargs="*", default=[], help="with --references: these tasks only")
    parser.add_argument("--profiler", default=None, help="registered profiler (default: the first usable)")
    parser.add_argument("--profiler-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seconds", type=float, default=90.0, help="budget of one profile")
    parser.add_argument("--mode", default=None, choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--json", dest="json_path", help="results file (resumed when it exists)")
    parser.add_argument("--limit-s", type=float, default=None, help="start no profile after this many seconds")
    parser.add_argument("--table", help="print the markdown table of a results file and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.table))
        return 0
    if not args.json_path or not (args.paths or args.records or args.references):
        parser.error("--json and --paths, --records or --references are needed")

    from geak_core.api.components import EvalJob
    from geak_core.cli.cli_eval import build_judge, read_entries
    from geak_core.cli.cli_profile import build_profiler
    from geak_core.engine.hardware import resolve_profile, visible_device
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.profiling import profile_candidate, unprofiled_reason

    began = time.monotonic()
    data: dict[str, Any] = {"rows": []}
    if os.path.exists(args.json_path):
        data = json.loads(open(args.json_path, encoding="utf-8").read())
    done = {(r["task"], r["candidate_hash"]) for r in data["rows"]}
    entries = read_entries(args.suite, args.paths, None, args.records, tuple(args.suite_option)) \
        if args.paths or args.records else []
    if args.references:
        entries += reference_entries(args.suite, tuple(args.suite_option), args.tasks)
    todo = [e for e in entries if (e.task.id, e.candidate.hash) not in done]
    print(f"{len(entries)} candidates, {len(entries) - len(todo)} already in {args.json_path}", flush=True)
    profiler = build_profiler(args.profiler, tuple(args.profiler_option))
    hardware = resolve_profile("auto", get_plugin_manager(), visible_device())
    profiler.set_hardware(hardware)
    evaluator = build_judge("triton", "local", (), args.mode, None, None, None, None, None, ())
    data["environment"] = {"python": platform.python_version(), "device": visible_device(),
                           "hardware": hardware.name if hardware else None, "profiler": profiler.profiler_name}
    first = not any(r.get("bound") for r in data["rows"])
    try:
        verdicts = dict(((job.task.id, job.candidate.id), result) for job, result in
                        evaluator.evaluate_many([EvalJob(e.task, e.candidate) for e in todo]))
        for entry in todo:
            if args.limit_s is not None and time.monotonic() - began > args.limit_s:
                print(f"--limit-s {args.limit_s:g} reached: {len(todo)} left for the next call", flush=True)
                break
            result = verdicts[(entry.task.id, entry.candidate.id)]
            row: dict[str, Any] = {"task": entry.task.id, "candidate": entry.candidate.id,
                                   "candidate_hash": entry.candidate.hash, "correct": result.correct,
                                   "speedup": result.speedup}
            why = unprofiled_reason(result)
            if why is not None:
                row.update(error=why, seconds=0.0)
            else:
                record = profile_candidate(evaluator, entry.task, entry.candidate, result, profiler,
                                           args.seconds, hardware)
                diagnosis = record.diagnosis
                bound, fraction = judge_fraction(result, record.case)
                numbers = dict(diagnosis.numbers) if diagnosis else {}
                row.update(case=record.case, seconds=round(record.seconds, 2), error=record.error,
                           first=first and record.error is None, judge_bound=bound, judge_fraction=fraction,
                           bound=diagnosis.bound if diagnosis else None,
                           dram_fraction=numbers.get("dram_fraction"),
                           compute_fraction=numbers.get("compute_fraction"),
                           kernels=len(record.kernels), record=record.to_dict())
                first = first and record.error is not None
                compare(row)
            data["rows"].append(row)
            data["summary"] = summarize(data["rows"])
            _write_json(args.json_path, data)
            print(f"{row['task']}: {row.get('bound') or '-'} {row.get('relative_difference')} "
                  f"{row['seconds']} s {row.get('error') or ''}", flush=True)
    finally:
        evaluator.close()
    data["summary"] = summarize(data["rows"])
    _write_json(args.json_path, data)
    print(json.dumps(data["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
