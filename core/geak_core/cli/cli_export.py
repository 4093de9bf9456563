"""``geak-core export``: a run's candidates and transitions as a data set (JSONL or Parquet)."""

from __future__ import annotations

from pathlib import Path

import click

from geak_core.reporting.export import FORMATS


@click.command("export", short_help="A run as a data set (JSONL or Parquet).")
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True,
              help="jsonl: JSON Lines; parquet: Apache Parquet (needs pyarrow).")
@click.option("-o", "--out", "out", type=click.Path(file_okay=False),
              help="Folder for candidates.<format>, transitions.<format>, categories.<format>, "
                   "levels.<format> and profiles.<format> (default: <run-id>-export).")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where run ids are looked up (a run may also be given as its folder).")
def export_command(run_ref: str, fmt: str, out: str | None, output_dir: str) -> None:
    """Export RUN (id, unique prefix or folder) for training and analysis: one row per
    candidate (task, round kind, prompt, reply, code, verdict, failed stage, speedup, roofline
    fraction, hardware, model, code metrics), and the transitions it produced (error_to_fix,
    slow_to_fast), and, where tasks carry categories, one row per category (tasks, call and
    execution accuracy, mean speedup, mean max(IOU, MFU)), and where they carry KernelBench
    levels, one row per level (the same accuracies and speedup, and fast_p against PyTorch
    eager), and where candidates were profiled, one row per profile (bottleneck, evidence,
    counters, or why there is none). Each loads with
    datasets.load_dataset("json" or "parquet", data_files=...); docs/export.md holds the schema."""
    from geak_core.cli.cli_report import hardware_profiles
    from geak_core.engine.store import resolve_run
    from geak_core.reporting.export import export_run
    from geak_core.reporting.rundata import load_run

    run_dir = resolve_run(run_ref, output_dir)
    folder = Path(out) if out else Path(f"{run_dir.name}-export")
    written = export_run(load_run(run_dir), folder, fmt, hardware_profiles())
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(written["kinds"].items())) or "none"
    click.echo(f"wrote {written['candidates']} candidates to {written['files']['candidates']}")
    click.echo(f"wrote {written['transitions']} transitions ({kinds}) to {written['files']['transitions']}")
    if written["categories"]:
        click.echo(f"wrote {written['categories']} categories to {written['files']['categories']}")
    if written["levels"]:
        click.echo(f"wrote {written['levels']} levels to {written['files']['levels']}")
    if written["profiles"]:
        click.echo(f"wrote {written['profiles']} profiles to {written['files']['profiles']}")
    click.echo(f"speedup (headline): {written['speedup_method']}; speedup_sum, speedup_geomean and "
               "speedup_mean_ratio hold each aggregate")
