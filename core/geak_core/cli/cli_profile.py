"""``geak-core profile``: a correct kernel's bottleneck, from a profiler's counters.

The file is read as ``geak-core eval`` reads candidate files (``--task`` names its task, or
the file is named for it) and judged first by the same judge (``judge_options``): a profile
is only for a correct candidate, so a wrong one gets its verdict's reason and exit status 1.
Then the judge profiles it (``EvaluatorBase.profile``: the candidate's own code on one of the
task's timed cases, ``--case`` or the largest, under the profiler's tool, in the judge's
sandbox, within ``--seconds``) and ``engine.profiling.profile_candidate`` reads the
diagnosis, as the agent's loop does: the class (memory-, compute-, latency- or
launch-bound), the evidence for it and each kernel's main counters are printed; ``--json``
prints the profile record instead, and ``-o/--out`` writes it.

``--profiler`` names a registered profiler (``--profiler-option KEY=VALUE`` as in
``[profiler]``); by default the first of ncu, proton and rocprof that is installed and usable
here. Exit status: 0 with a profile, 1 without one (a wrong candidate, a failed profile: the
reason is printed), 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from geak_core.api.components import EvalJob
from geak_core.api.errors import InputError
from geak_core.api.profiling import ProfileRecord, counters_text
from geak_core.cli.cli_eval import (
    build_judge,
    judge_options,
    read_entries,
    suite_option_flag,
    verdict_line,
)
from geak_core.cli.cli_options import (
    ConventionCommand,
    build_with_options,
    exit_on_bad_input,
    json_flag,
    out_option,
    progress_echo,
)
from geak_core.engine.profiling import (
    PREFERRED_PROFILERS,
    first_usable_profiler,
    profile_candidate,
)
from geak_core.engine.recipe import ProfilerSection


def build_profiler(name: str | None, options: tuple[str, ...]) -> Any:
    """The registered profiler ``name`` with its ``KEY=VALUE`` options (checked as
    ``[profiler]`` is); without a name, the first usable of ``PREFERRED_PROFILERS``."""
    from geak_core.engine.plugins import get_plugin_manager

    if name is None:
        if options:
            raise InputError("--profiler-option needs --profiler NAME: the options are that profiler's")
        return first_usable_profiler(get_plugin_manager())
    return build_with_options("profiler", name, options, "--profiler-option")


def profile_lines(record: ProfileRecord) -> list[str]:
    """The printed profile: where it ran, the diagnosis and its evidence, each kernel's counters."""
    calls = f"{record.calls} call{'s' if record.calls != 1 else ''}"
    lines = [f"profiled by {record.profiler} on case {record.case} ({calls}, {record.seconds:.1f} s)"]
    diagnosis = record.diagnosis
    if diagnosis is None:
        lines.append("no diagnosis: the counters say too little")
    else:
        peak = f", {diagnosis.peak_fraction:.0%} of its peak" if diagnosis.peak_fraction is not None else ""
        lines.append(f"{diagnosis.text}{peak}")
        lines += [f"  {line}" for line in diagnosis.evidence]
    lines.append(f"kernels ({len(record.kernels)}, the longest first):")
    lines += [f"  {line}" for line in counters_text(record, limit=len(record.kernels))]
    return lines


@click.command("profile", cls=ConventionCommand, short_help="Profile a correct kernel: its bottleneck.")
@click.argument("path")
@click.option("--suite", "suite_name", default="rocm", show_default=True, help="Registered suite.")
@suite_option_flag
@click.option("--task", "task_id", help="Task of the candidate file (else the file is named for it).")
@click.option("--profiler", "profiler_name",
              help=f"Registered profiler (default: the first usable of {', '.join(PREFERRED_PROFILERS)}).")
@click.option("--profiler-option", "profiler_options", multiple=True, metavar="KEY=VALUE",
              help="An option of the profiler, as in [profiler] (repeatable).")
@click.option("--case", "case_name", default="", help="The case to profile (default: the largest timed case).")
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), default=ProfilerSection().seconds,
              show_default=True, help="Seconds the profile may take at most (the tool's start, the compile, "
                                      "the profiled call).")
@json_flag("Print the profile record as JSON on stdout (the verdict line goes to stderr).")
@out_option("Write the profile record (JSON) to this file.")
@judge_options
def profile_command(path: str, suite_name: str, suite_options: tuple[str, ...], task_id: str | None,
                    profiler_name: str | None, profiler_options: tuple[str, ...], case_name: str, seconds: float,
                    as_json: bool, out: str | None, **judge: Any) -> None:
    """Judge a kernel file and, if it is correct, profile it: its bottleneck (memory-,
    compute-, latency- or launch-bound), the evidence, and its kernels' counters. The
    profile changes nothing of the verdict."""
    from geak_core.engine.hardware import resolve_profile, visible_device
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.store import atomic_write

    with exit_on_bad_input():
        entries = read_entries(suite_name, [path], task_id, None, suite_options)
        if len(entries) != 1:
            raise InputError(f"{path}: give one candidate file ({len(entries)} found)")
        entry = entries[0]
        profiler = build_profiler(profiler_name, profiler_options)
        hardware = resolve_profile(judge["hardware"] or "auto", get_plugin_manager(), visible_device())
        profiler.set_hardware(hardware)
        evaluator = build_judge(**judge)

    echo = progress_echo(as_json)
    try:
        ((_, verdict),) = list(evaluator.evaluate_many([EvalJob(entry.task, entry.candidate)]))
        echo(verdict_line(entry.task, verdict))
        record = profile_candidate(evaluator, entry.task, entry.candidate, verdict, profiler, seconds, hardware,
                                   case=case_name)
    finally:
        evaluator.close()
    if out:
        atomic_write(out, json.dumps(record.to_dict(), indent=2))
    if as_json:
        click.echo(json.dumps(record.to_dict(), indent=2))
    elif record.error is None:
        for line in profile_lines(record):
            click.echo(line)
    if record.error is not None:
        click.echo(f"not profiled: {record.error}", err=True)
        sys.exit(1)
