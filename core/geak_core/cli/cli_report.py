"""``geak-core report``: one self-contained HTML page for one or more stored runs."""

from __future__ import annotations

from pathlib import Path

import click

from geak_core.api.errors import InputError
from geak_core.cli.cli_options import ConventionCommand


def hardware_profiles() -> list:
    """Every registered hardware profile (their peaks draw the roofline ceilings)."""
    from geak_core.engine.plugins import get_plugin_manager

    manager = get_plugin_manager()
    return [manager.build("hardware_profile", name) for name in sorted(manager.components("hardware_profile"))]


@click.command("report", cls=ConventionCommand, renamed={"--output": "-o/--out"},
               short_help="One HTML report of one or more runs.")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-o", "--out", "output", default="report.html", show_default=True,
              type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where run ids are looked up (a run may also be given as its folder).")
@click.option("--title", help="The page's title (default: the runs' names).")
def report_command(runs: tuple[str, ...], output: str, output_dir: str, title: str | None) -> None:
    """Write one HTML report for RUN... (id, unique prefix or folder): summary and per-task
    tables, scaling curves, speedups, rooflines, breakdowns, the ablation table for several
    runs, and each task's best kernel. The file needs no network to open."""
    from geak_core.engine.store import atomic_write, resolve_run
    from geak_core.reporting.html_report import build_report
    from geak_core.reporting.rundata import load_run

    folders = [resolve_run(ref, output_dir) for ref in runs]
    if len({f.resolve() for f in folders}) != len(folders):
        raise InputError("a run is named twice")
    page = build_report([load_run(f) for f in folders], hardware_profiles(), title)
    atomic_write(output, page)
    click.echo(f"wrote {Path(output)} ({len(page) // 1024} KiB, {len(folders)} run(s))")
