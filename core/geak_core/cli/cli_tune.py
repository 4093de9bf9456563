"""``geak-core tune``: tune the launch configuration of kernels from anywhere.

Candidates are read exactly as ``geak-core eval`` reads them (files, folders, ``--candidates``
JSONL records: ``cli_eval.read_entries``) and judged by the same judge (``judge_options``).
Each correct candidate whose speed was measured is tuned by the chosen tuner (``--tuner``,
``grid`` by default; ``--tuner-option KEY=VALUE`` as in ``[tuner]``) within ``--variants``
and ``--seconds`` per candidate: its variants are judged by that judge, and the fastest
correct variant is kept if it beats the candidate. A candidate that is not correct, or whose
speed was not measured (the interpreter on a CPU checks correctness only), is not tuned, and
its record says why.

One record per candidate (``engine.tuning.tune_record``, which the judge's ``tune`` tool
answers with too), written to ``-o/--out`` (``.jsonl`` lines or a
``.json`` list) atomically after each one, so that ``--resume`` skips the records a stopped
run already wrote. Exit status: 0 when every candidate was judged, 1 when the judge failed on
some (a judge error), 2 for bad input.

Scripts that tune candidates themselves (``bench/tune_published.py``,
``bench/tune_rocm_recovery.py``) build the tuner with ``build_tuner`` and tune with
``tune_candidate`` (``engine.tuning``'s), as this command does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import click

from geak_core.api.components import EvalJob, TuneBudget
from geak_core.api.errors import InputError
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import Task
from geak_core.cli.cli_eval import (
    RecordFile,
    build_judge,
    judge_options,
    read_entries,
    read_journal,
    suite_option_flag,
)
from geak_core.cli.cli_options import (
    ConventionCommand,
    build_with_options,
    exit_on_bad_input,
    json_flag,
    out_option,
    progress_echo,
)
from geak_core.engine.progress import clip_left
from geak_core.engine.recipe import TunerSection
from geak_core.engine.tuning import tune_candidate

DEFAULTS = TunerSection()


def tune_line(record: dict[str, Any]) -> str:
    """The printed line of one record."""
    head = f"{record['task']:<32} {clip_left(str(record['candidate']), 40):<40} "
    if "judge_error" in (record.get("flags") or []):
        return head + f"JUDGE ERROR  {record.get('reason') or ''}".rstrip()
    if not record["correct"]:
        return head + f"not correct ({record.get('failed_stage')}): not tuned"
    before, after = record["untuned_speedup"], record["tuned_speedup"]
    if before is None:
        return head + "correct  " + "; ".join(record["notes"])
    text = head + f"{before:.3f}x"
    if record["kept"]:
        text += f" -> {after:.3f}x  " + ", ".join(record["changes"])
    else:
        text += "  no faster variant"
    return text + f"  ({record['variants_judged']} variants judged)"


def tune_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the records, and the mean speedup untuned and tuned of those tuned."""
    tuned = [r for r in records if r["untuned_speedup"] is not None]
    return {
        "records": len(records),
        "correct": sum(bool(r["correct"]) for r in records),
        "tuned": len(tuned),
        "improved": sum(bool(r["kept"]) for r in records),
        "variants_judged": sum(r["variants_judged"] for r in records),
        "judge_errors": sum("judge_error" in (r.get("flags") or []) for r in records),
        "mean_untuned_speedup": sum(r["untuned_speedup"] for r in tuned) / len(tuned) if tuned else None,
        "mean_tuned_speedup": sum(r["tuned_speedup"] for r in tuned) / len(tuned) if tuned else None,
    }


def _speed(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def summary_text(summary: dict[str, Any]) -> list[str]:
    return [
        "",
        f"records {summary['records']}  correct {summary['correct']}  tuned {summary['tuned']}  "
        f"faster variant kept {summary['improved']}  variants judged {summary['variants_judged']}  "
        f"judge errors {summary['judge_errors']}",
        f"mean speedup of the tuned records: untuned {_speed(summary['mean_untuned_speedup'])}, "
        f"tuned {_speed(summary['mean_tuned_speedup'])}",
    ]


def build_tuner(name: str, options: Iterable[str], hardware: str | None) -> Any:
    """The registered tuner ``name`` with its ``KEY=VALUE`` options (checked as ``[tuner]``
    is), given the hardware profile ``hardware`` names (None or ``auto``: the visible
    device's), whose limits bound its variants."""
    from geak_core.engine.hardware import resolve_profile, visible_device
    from geak_core.engine.plugins import get_plugin_manager

    tuner = build_with_options("tuner", name, options, "--tuner-option")
    tuner.set_hardware(resolve_profile(hardware or "auto", get_plugin_manager(), visible_device()))
    return tuner


def tune_one(task: Task, candidate: Candidate, untuned: EvalResult, tuner: Any, judge: Any,
             budget: TuneBudget) -> dict[str, Any]:
    """Tune one judged candidate (if it can be) and return its record."""
    return tune_candidate(task, candidate, untuned, tuner, judge, budget)[0]


@click.command("tune", cls=ConventionCommand, short_help="Tune correct kernels' launch configurations.")
@click.argument("paths", nargs=-1)
@click.option("--suite", "suite_name", default="rocm", show_default=True, help="Registered suite.")
@suite_option_flag
@click.option("--task", "task_id", help="Task of the candidate files given as PATHS.")
@click.option("--candidates", "candidates_file",
              help="JSONL records, as geak-core eval reads them: task/task_id + code/predict/file.")
@click.option("--tuner", "tuner_name", default="grid", show_default=True, help="Registered tuner.")
@click.option("--tuner-option", "tuner_options", multiple=True, metavar="KEY=VALUE",
              help="An option of the tuner, as in [tuner] (repeatable), e.g. dtype_bytes=4.")
@click.option("--variants", type=click.IntRange(min=1), default=DEFAULTS.candidates, show_default=True,
              help="Variants judged per candidate at most.")
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), default=DEFAULTS.seconds,
              show_default=True, help="Seconds of tuning per candidate at most (no variant is sent to "
                                      "the judge after them).")
@out_option("Write one record per candidate to this file (.jsonl lines or a .json list), rewritten "
            "after every record: the journal --resume reads.")
@json_flag("Print the summary as JSON on stdout (the record and progress lines go to stderr).")
@judge_options
@click.option("--resume", is_flag=True,
              help="Keep the records already in -o/--out FILE (a run stopped half-way) and tune only the "
                   "rest; records of judge errors are done again.")
def tune_command(paths: tuple[str, ...], suite_name: str, suite_options: tuple[str, ...],
                 task_id: str | None, candidates_file: str | None,
                 tuner_name: str, tuner_options: tuple[str, ...], variants: int, seconds: float,
                 out: str | None, as_json: bool, resume: bool, **judge: Any) -> None:
    """Tune the launch configuration of correct kernels (block sizes, warps, stages...): each
    candidate is judged, its variants too, and the fastest correct variant kept if it beats
    it. On a CPU the judge checks correctness only, so nothing is tuned (each record says so)."""
    import json

    with exit_on_bad_input():
        entries = read_entries(suite_name, paths, task_id, candidates_file, suite_options)
        if not entries:
            raise InputError("nothing to tune: give candidate files, a directory or --candidates")
        done: dict[tuple[str, str], dict[str, Any]] = {}
        if resume:
            if not out:
                raise InputError("--resume needs -o/--out FILE: the records of the run to resume")
            done = read_journal(out)
            kept = sum((e.task.id, e.candidate.id) in done for e in entries)
            click.echo(f"resuming {out}: {kept} records kept, {len(entries) - kept} to tune", err=True)
        tuner = build_tuner(tuner_name, tuner_options, judge["hardware"])
        evaluator = build_judge(**judge)

    echo = progress_echo(as_json)  # with --json, stdout carries the summary alone
    budget = TuneBudget(candidates=variants, seconds=seconds)
    records: list[dict[str, Any]] = []
    journal = RecordFile(out) if out else None
    try:
        for entry in entries:
            record = done.get((entry.task.id, entry.candidate.id))
            if record is None:
                untuned = entry.verdict
                if untuned is None:
                    ((_, untuned),) = list(evaluator.evaluate_many([EvalJob(entry.task, entry.candidate)]))
                record = tune_one(entry.task, entry.candidate, untuned, tuner, evaluator, budget)
            records.append(record)
            echo(tune_line(record))
            if journal is not None:
                journal.add(record)
                journal.write()
    finally:
        evaluator.close()
    summary = tune_summary(records)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        for line in summary_text(summary):
            click.echo(line)
    if out:
        echo(f"wrote {len(records)} records to {out}")
    if summary["judge_errors"]:
        sys.exit(1)
