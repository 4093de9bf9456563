"""Does the grid tuner speed up the correct TritonBench-G records of a published output file?

The target measured: on an H100 or H200, over the gpt-4o (comp) TritonBench-G records that
the judge finds correct and that have tunable knobs, ``geak-core tune`` with a budget of 2
minutes per record raises the mean-of-ratios speedup against the reference, reported per
record and in aggregate, every tuned variant judged correct; target: at least 1.15x
geometric-mean improvement over the untuned records.

The records are read as ``geak-core eval --suite tritonbench --candidates FILE`` and
``geak-core tune`` read them (``cli_eval.entries_from_jsonl``). A record is tuned when:

* it has code, and the grid tuner's own knob finder (``geak_tuner_grid``: block sizes,
  ``num_warps``, ``num_stages`` at its launches and in its autotune configs) finds a knob
  in it (the AMD-only knobs count on a HIP device only); checked first, without a GPU;
* ``--verdicts`` (``geak-core eval -o`` records of the same file) does not say it is
  wrong: records judged not correct there are left out unjudged;
* the judge finds it correct and times it: each record left is judged, then tuned, as
  ``geak-core tune --candidates FILE --seconds 120`` does (``cli_tune.tune_candidate``: the
  grid tuner's variants judged by the same judge, the fastest correct one kept if it beats
  the record), judged and tuned in this run so that both speedups come from one machine.

Speedups are the judge's default, the mean of per-shape ratios of the reference's latency
over the candidate's. Per record: untuned and tuned speedup (the kept variant's, else its
own), improvement = tuned / untuned, the knobs the kept variant changed and its diff, the
variants judged and how many were correct, whether all were. In aggregate: the geometric
mean of the improvements over the records tuned (1.0 for a record where no variant was
faster), and the counts of each step.

Results go to ``--json`` after every record (rewritten atomically); run again with the same
``--json`` and settings, the records it holds are skipped. ``--limit-s N`` starts no record
after N seconds. ``--table OUT`` prints the markdown table of a file.

On the GPU (one H100 or H200; a record should take about 2.5 minutes: judged, 120 s of
tuning, the variants in flight (an estimate, not yet measured); run again with the same
``--json`` until no record is left)::

    export GEAK_TRITONBENCH_DATA=.ext/TritonBench/data
    RECORDS=.ext/TritonBench/LLM_generated/Bench_G_general_purpose/output_gpt-4o_comp.jsonl
    geak-core eval --suite tritonbench --candidates $RECORDS -o verdicts.jsonl   # optional, once
    python bench/tune_published.py --records $RECORDS --verdicts verdicts.jsonl \\
        --json runs/tune-gpt4o.json --limit-s 360
    python bench/tune_published.py --table runs/tune-gpt4o.json

On the CPU (``TRITON_INTERPRET=1``, a smoke test: correctness only, so nothing is tuned and
no improvement is reported)::

    TRITON_INTERPRET=1 python bench/tune_published.py --mode interpreter \\
        --data plugins/suite_tritonbench/tests/fixtures/TritonBench/data \\
        --records outputs.jsonl --json /tmp/tune-published.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import tune_results
from tune_results import ResultsFile, SettingsChanged, StartLimit, cell, times

TARGET_IMPROVEMENT = 1.15


def tunable_knobs(code: str, hip: bool) -> list[str]:
    """The knobs the grid tuner varies in ``code`` (``kernel.NAME=value``, `` (default)`` after
    one a launch leaves at Triton's default): those its search keeps of ``find_knobs``' (a
    kernel without a loop has no ``num_stages`` to tune); none when it does not parse."""
    from geak_tuner_grid.model import Limits
    from geak_tuner_grid.variants import Search

    try:
        knobs = Search(code, Limits(hip=hip)).knobs
    except (SyntaxError, ValueError):
        return []
    return [f"{k.kernel}.{k.name}={k.value}" + (" (default)" if k.implicit else "") for k in knobs]


def line_number(candidate_id: str) -> int | None:
    tail = candidate_id.rpartition(":")[2]
    return int(tail) if tail.isdigit() else None


def unjudged_row(entry: Any, status: str, knobs: list[str], reason: str = "") -> dict[str, Any]:
    """The row of a record left out before the judge: no code, an unusable task, no knob, or
    judged not correct in ``--verdicts``."""
    return {"candidate": entry.candidate.id, "line": line_number(entry.candidate.id), "task": entry.task.id,
            "status": status, "knobs": knobs, "reason": reason}


# The tuner's note for a candidate it finds nothing to vary in (rows written before the knob
# list above asked the tuner's search have knobs it does not vary, and this note).
NO_KNOBS = "no tunable knobs found"


def nothing_varied(record: dict[str, Any]) -> bool:
    """The tuner judged no variant because it found no knob it varies."""
    return not record.get("variants_judged") and NO_KNOBS in record.get("notes", [])


def tuned_row(entry: Any, knobs: list[str], record: dict[str, Any], kept: Any, device: str) -> dict[str, Any]:
    """The row of a judged record: ``geak-core tune``'s record (``tune_record``), its status and
    improvement."""
    if "judge_error" in (record.get("flags") or []):
        status = "judge error"
    elif not record["correct"]:
        status = "not correct"
    elif record["untuned_speedup"] is None:
        status = "not timed"
    elif nothing_varied(record):
        status = "no tunable knobs"
    else:
        status = "tuned"
    before, after = record["untuned_speedup"], record["tuned_speedup"]
    return {
        **record,
        "line": line_number(entry.candidate.id),
        "status": status,
        "device": device,
        "knobs": knobs,
        "improvement": after / before if status == "tuned" and before and after else None,
        "all_variants_correct": record["variants_correct"] == record["variants_judged"],
        "kept_correct": None if kept is None else bool(kept.result and kept.result.correct),
    }


def status_of(row: dict[str, Any]) -> str:
    if row["status"] == "tuned" and nothing_varied(row):
        return "no tunable knobs"
    return row["status"]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [{**r, "status": status_of(r)} for r in rows]
    tuned = [r for r in rows if r["status"] == "tuned"]
    # judged correct, and nothing to vary in it (a row without knobs found is not judged at all)
    knobless = [r for r in rows if r["status"] == "no tunable knobs" and "variants_judged" in r]
    judged = [r for r in rows if r["status"] in ("tuned", "not timed", "not correct")] + knobless
    improvement = tune_results.geometric_mean(r["improvement"] for r in tuned)
    return {
        "records": len(rows),
        "with_knobs": sum(bool(r["knobs"]) for r in rows),
        "left_out_by_verdicts": sum(r["status"] == "not correct (verdicts)" for r in rows),
        "judged": len(judged),
        "correct": sum(r["status"] in ("tuned", "not timed") for r in rows) + len(knobless),
        "not_timed": sum(r["status"] == "not timed" for r in rows),
        "judge_errors": sum(r["status"] == "judge error" for r in rows),
        "tuned": len(tuned),
        "improved": sum(bool(r["kept"]) for r in tuned),
        "variants_judged": sum(r.get("variants_judged", 0) for r in rows),
        "all_variants_correct": sum(r["all_variants_correct"] for r in tuned),
        "untuned_geomean": tune_results.geometric_mean(r["untuned_speedup"] for r in tuned),
        "tuned_geomean": tune_results.geometric_mean(r["tuned_speedup"] for r in tuned),
        "untuned_mean": sum(r["untuned_speedup"] for r in tuned) / len(tuned) if tuned else None,
        "tuned_mean": sum(r["tuned_speedup"] for r in tuned) / len(tuned) if tuned else None,
        "improvement_geomean": improvement,
        "target": f"geometric mean of improvements >= {TARGET_IMPROVEMENT}",
        "target_met": None if improvement is None else improvement >= TARGET_IMPROVEMENT,
    }


def markdown(data: dict[str, Any]) -> str:
    env, settings, s = data["environment"], data["settings"], data["summary"]
    lines = [
        f"{Path(settings.get('records', '?')).name} tuned by `grid` ({settings.get('seconds', '?')} s, "
        f"{settings.get('variants', '?')} variants a record) on "
        f"{tune_results.device_text(env)}",
        "",
        "| line | task | untuned | tuned | improvement | knobs changed | variants judged (correct) | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(data["rows"], key=lambda r: (r["line"] is None, r["line"] or 0, r["candidate"])):
        row = {**row, "status": status_of(row)}
        judged = "-" if "variants_judged" not in row else f"{row['variants_judged']} ({row['variants_correct']})"
        improvement = "-" if row.get("improvement") is None else f"{row['improvement']:.3f}"
        why = row.get("reason") if row["status"] not in ("tuned", "not timed") else ""
        status = cell(why, 70) if why and why.startswith(row["status"]) else (
            row["status"] + (f": {cell(why, 60)}" if why else ""))
        lines.append(
            f"| {row['line'] or '-'} | {row['task']} | {times(row.get('untuned_speedup'))} | "
            f"{times(row.get('tuned_speedup'))} | {improvement} | {cell(', '.join(row.get('changes') or []), 70)} | "
            f"{judged} | {status} |")
    lines += ["", f"{s['records']} records: {s['with_knobs']} with tunable knobs, {s['left_out_by_verdicts']} left "
              f"out as not correct by --verdicts, {s['judged']} judged, {s['correct']} correct, {s['tuned']} tuned "
              f"(speed measured), {s['improved']} with a faster variant kept; {s['judge_errors']} judge error(s)."]
    if s["tuned"]:
        lines.append(f"improvement, geometric mean over the {s['tuned']} tuned records: "
                     f"{s['improvement_geomean']:.3f}x (target {TARGET_IMPROVEMENT}x: "
                     f"{'met' if s['target_met'] else 'NOT met'}); speedup geomean untuned "
                     f"{times(s['untuned_geomean'])}, tuned {times(s['tuned_geomean'])}; every variant "
                     f"judged correct in {s['all_variants_correct']} of {s['tuned']} records.")
    else:
        lines.append("No speed was measured (the interpreter checks correctness only, on the CPU): nothing was "
                     "tuned, and there is no improvement to report.")
    lines.append("untuned, tuned: the judge's speedup against the reference (mean of per-shape ratios); "
                 "tuned is the kept variant's, else the record's own.")
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="", metavar="OUT",
                        help="print the table of an earlier --json file (several, comma-separated: one "
                             "table of their rows)")
    parser.add_argument("--data", default=os.environ.get("GEAK_TRITONBENCH_DATA", ""),
                        help="TritonBench data/ folder (default: $GEAK_TRITONBENCH_DATA)")
    parser.add_argument("--perf", default="", help="folder of <name>_perf.py scripts (default: found beside)")
    parser.add_argument("--instructions", default="", help="instruction JSON (default: beside the tasks)")
    parser.add_argument("--protocol", default="published", choices=["published", "strict"])
    parser.add_argument("--records", default="", help="a published output file (.jsonl)")
    parser.add_argument("--verdicts", default="", help="geak-core eval -o records of the same file")
    parser.add_argument("--json", dest="json_out", default="", help="results, rewritten after every record")
    parser.add_argument("--seconds", type=float, default=120.0, help="seconds of tuning per record")
    parser.add_argument("--variants", type=int, default=64,
                        help="variants judged per record at most (large enough that --seconds binds)")
    parser.add_argument("--limit-s", type=float, default=0.0, help="start no record after this many seconds")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--workers", type=int, default=0, help="GPUs, or CPU workers (0: the judge's default)")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per judge child (0: the judge's)")
    parser.add_argument("--hardware", default="", help="hardware profile (default: detect)")
    parser.add_argument("--evaluator", default="triton", help="registered evaluator (the judge)")
    parser.add_argument("--shard", default="0/1", metavar="K/N",
                        help="tune only every N-th record to be tuned, from the K-th (0-based): N runs, "
                             "one per GPU (CUDA_VISIBLE_DEVICES), each with its own --json; the rows of "
                             "records not tuned go to shard 0's file")
    return parser.parse_args(argv)


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    from geak_core.api.components import TuneBudget
    from geak_core.api.errors import GeakError
    from geak_core.cli.cli_eval import build_judge, entries_from_jsonl, read_journal
    from geak_core.cli.cli_tune import build_tuner, tune_candidate, tune_line
    from geak_core.engine.plugins import get_plugin_manager
    from geak_suite_tritonbench.suite import TritonBenchOptions

    args = _parse(argv)
    if args.table:
        print(markdown(tune_results.read_merged(args.table, summarize)))
        return 0
    if not (args.records and args.json_out and args.data):
        print("error: --records, --json and --data (or $GEAK_TRITONBENCH_DATA) are needed (or --table OUT)",
              file=sys.stderr)
        return 2
    try:
        shard, shards = (int(part) for part in args.shard.split("/"))
        if not 0 <= shard < shards:
            raise ValueError(f"--shard {args.shard}: K must be in 0..N-1")
    except ValueError as exc:
        print(f"error: --shard takes K/N, e.g. 1/4 ({exc})", file=sys.stderr)
        return 2
    try:
        settings = {"records": os.path.abspath(args.records), "records_sha256": _digest(args.records),
                    "protocol": args.protocol, "seconds": args.seconds, "variants": args.variants,
                    "speedup_method": "mean_ratio", "tuner": "grid", "shard": f"{shard}/{shards}"}
        results = ResultsFile(args.json_out, settings, "candidate", summarize)
        options = TritonBenchOptions(path=os.path.abspath(args.data), protocol=args.protocol,
                                     perf_scripts=os.path.abspath(args.perf) if args.perf else "",
                                     json=os.path.abspath(args.instructions) if args.instructions else "")
        suite = get_plugin_manager().build("suite", "tritonbench", options)
        entries = entries_from_jsonl(args.records, suite)
        verdicts = read_journal(args.verdicts) if args.verdicts else {}
        tuner = build_tuner("grid", (), args.hardware or None)
        profile = getattr(tuner, "profile", None)
        hip = profile is not None and profile.vendor == "amd"
        judge = build_judge(args.evaluator, "local", (), args.mode, args.workers or None, args.timeout or None,
                            args.hardware or None, None, "mean_ratio", ())
    except (GeakError, SettingsChanged, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results.environment = {**results.environment, **tune_results.environment(args.mode)}
    results.write()
    budget = TuneBudget(candidates=args.variants, seconds=args.seconds)
    limit = StartLimit(args.limit_s)
    not_started = 0
    to_tune = 0  # records that pass the filters below, in order: shard K tunes every N-th from the K-th
    try:
        for entry in entries:
            cid = entry.candidate.id
            unjudged: tuple[str, list[str], str] | None = None
            knobs: list[str] = []
            if entry.verdict is not None:  # no code in the reply, or a task the suite cannot judge
                unjudged = ("skipped" if "skipped" in entry.verdict.flags else "no code", [],
                            entry.verdict.reason or "")
            else:
                knobs = tunable_knobs(entry.candidate.code, hip)
                earlier = verdicts.get((entry.task.id, cid))
                if earlier is not None and not earlier["correct"]:
                    unjudged = ("not correct (verdicts)", knobs,
                                f"{earlier.get('failed_stage')}: {earlier.get('reason') or ''}")
                elif not knobs:
                    unjudged = ("no tunable knobs", [], "")
            if unjudged is not None:
                if shard == 0 and not results.done(cid):
                    results.put(unjudged_row(entry, *unjudged))
                continue
            to_tune += 1
            if (to_tune - 1) % shards != shard or results.done(cid):
                continue  # another shard's, or done in an earlier run
            if not limit.may_start():
                not_started += 1
                continue
            untuned = tune_results.judge_once(judge, entry.task, entry.candidate)
            tune_results.note_device(results.environment, untuned)
            record, kept = tune_candidate(entry.task, entry.candidate, untuned, tuner, judge, budget)
            row = tuned_row(entry, knobs, record, kept, untuned.device)
            results.environment["last_run_s"] = round(limit.elapsed(), 1)
            results.put(row)
            print(tune_line(record), file=sys.stderr, flush=True)
    finally:
        judge.close()
        results.environment["last_run_s"] = round(limit.elapsed(), 1)
        results.write()
    if not_started:
        print(f"{not_started} record(s) not started (--limit-s {args.limit_s:g}): run again with the same --json",
              file=sys.stderr)
    print(markdown(results.data()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
