"""``geak-core corpus``: questions about a retriever's example corpus.

``corpus audit`` measures how close every entry comes to the tasks of the
installed suites. The measuring is the retriever's (``AuditableRetriever``);
this module loads the suites, asks the retriever and prints the result.

Exit codes: 0 no entry exceeds the retriever's threshold for any task, 1 some
entry does (each such entry is never retrieved for that task; the command
lists them), 2 bad input (an unknown suite or retriever, a retriever without a
corpus, no suite that could be loaded).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import click

from geak_core.api.components import AuditableRetriever, CorpusAudit
from geak_core.api.errors import GeakError, InputError
from geak_core.cli.cli_options import build_suite, json_flag

ORIGINALS_SUITE = "rocm"  # --originals is this suite's baseline option


@click.group("corpus")
def corpus_group() -> None:
    """Inspect a retriever's corpus of examples."""


@corpus_group.command("audit", short_help="How close each example comes to each task.")
@click.option("--suite", "suites", multiple=True, metavar="SUITE",
              help="Compare with this suite's tasks (repeatable; default: every installed suite). "
                   "A suite whose data is missing is skipped with the reason.")
@click.option("--originals", type=click.Path(file_okay=False), metavar="DIR",
              help="GEAK-eval's ROCm_v1 folder: compare with the published originals of the rocm "
                   "tasks too (the rocm suite's baseline option).")
@click.option("--retriever", "retriever_name", default="codesim", show_default=True,
              help="The retriever whose corpus is audited, with its default options.")
@click.option("--recipe", type=click.Path(dir_okay=False), metavar="RECIPE",
              help="Audit the retriever of RECIPE's [retriever] section, with its options (extra "
                   "corpora, thresholds) instead of --retriever.")
@click.option("--top", type=int, default=0, show_default=True,
              help="Print only the N entries closest to a task (0: all).")
@json_flag("Print the whole audit as JSON on stdout.")
def corpus_audit(suites: tuple[str, ...], originals: str | None, retriever_name: str,
                 recipe: str | None, top: int, as_json: bool) -> None:
    """Every corpus entry's highest similarity to the tasks of each suite (and to GEAK-eval's
    ROCm originals with --originals), and the retriever's highest score for it.

    Exits 1 when an entry's similarity to a task exceeds the retriever's threshold (such an
    entry is never retrieved for that task), 0 otherwise, 2 on bad input.
    """
    from geak_core.engine.plugins import get_plugin_manager

    manager = get_plugin_manager()
    name, retriever = _retriever(manager, retriever_name, recipe)
    chosen = list(suites) or sorted(manager.components("suite"))
    for suite in chosen:
        manager.spec("suite", suite)  # an unknown name is bad input, not a suite without data
    if originals and ORIGINALS_SUITE not in chosen:
        raise InputError(f"--originals compares with the {ORIGINALS_SUITE} suite's originals; "
                         f"add --suite {ORIGINALS_SUITE}")
    if originals and not Path(originals).is_dir():
        raise InputError(f"--originals: {originals} is not a folder (expected GEAK-eval's "
                         "geak_eval/data/ROCm/data/ROCm_v1)")
    tasks, skipped = _load_tasks(chosen, originals)
    for suite, reason in skipped.items():
        click.echo(f"{suite}: not audited: {reason}", err=True)
    if not tasks:
        raise InputError("no suite could be loaded: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    audit = retriever.audit(tasks, _progress() if sys.stderr.isatty() else None)
    if as_json:
        click.echo(json.dumps({"retriever": name, "skipped": skipped, **dataclasses.asdict(audit)},
                              indent=2))
    else:
        click.echo(render(audit, name, top))
    click.get_current_context().exit(1 if audit.exceeding else 0)


def _retriever(manager: Any, name: str, recipe: str | None) -> tuple[str, AuditableRetriever]:
    options = None
    if recipe:
        from geak_core.engine.recipe import load_recipe

        if not Path(recipe).exists():
            raise InputError(f"no such recipe: {recipe}")
        component = load_recipe(recipe, manager, check_env=False).component("retriever")
        name, options = component.name, component.options
    built = manager.build("retriever", name, options)
    if not isinstance(built, AuditableRetriever):
        raise InputError(f"retriever {name!r} has no corpus to audit")
    return name, built


def _load_tasks(suites: list[str], originals: str | None) -> tuple[list[Any], dict[str, str]]:
    tasks: list[Any] = []
    skipped: dict[str, str] = {}
    for suite in suites:
        options = (f"baseline={originals}",) if originals and suite == ORIGINALS_SUITE else ()
        try:
            tasks += build_suite(suite, options).tasks()
        except GeakError as exc:
            skipped[suite] = str(exc)
    return tasks, skipped


def _progress() -> Any:
    def show(done: int, total: int) -> None:
        click.echo(f"\raudit: {done}/{total} tasks", err=True, nl=done == total)

    return show


def _cell(value: float, task: str, spec: str) -> str:
    return f"{value:{spec}} {task}" if value > 0 else "0"


def render(audit: CorpusAudit, retriever: str, top: int = 0) -> str:
    """The audit as text: a Markdown table, one row per entry (closest first), one column
    per suite and kind of code, then the entries over the threshold, if any."""
    groups = sorted(audit.compared, key=lambda g: (g.split()[0], g.split()[1] != "reference"))
    compared = ", ".join(f"{group}s ({n})" for group, n in
                         ((g, audit.compared[g]) for g in groups))
    lines = [
        f"{len(audit.entries)} entries of {retriever} against {compared}.",
        f"Similarity: {audit.measure}; threshold {audit.threshold}. Score: the retriever's own, "
        "the task's code as the query.",
        "",
        "| entry | " + " | ".join(f"{g}s" for g in groups) + " | highest score |",
        "|---" * (len(groups) + 2) + "|",
    ]

    def highest(row: Any) -> float:
        return max((c.similarity for c in row.closest), default=0.0)

    rows = sorted(audit.entries, key=lambda r: (-highest(r), r.entry))
    for row in rows[:top] if top > 0 else rows:
        by_group = {f"{c.suite} {c.against}": c for c in row.closest}
        cells = [_cell(by_group[g].similarity, by_group[g].similarity_task, ".3f") if g in by_group
                 else "-" for g in groups]
        best = max(row.closest, key=lambda c: c.score, default=None)
        score = _cell(best.score, f"{best.suite}/{best.score_task}", ".1f") if best else "-"
        lines.append(f"| {row.entry} | " + " | ".join(cells) + f" | {score} |")
    lines.append("")
    if audit.exceeding:
        entries = {e.entry for e in audit.exceeding}
        lines.append(f"{len(entries)} entries over the threshold {audit.threshold} "
                     "(never retrieved for these tasks):")
        lines += [f"  {e.entry}  {e.task} ({e.against})  {e.similarity:.3f}" for e in audit.exceeding]
    else:
        lines.append(f"no entry over the threshold {audit.threshold}")
    return "\n".join(lines)
