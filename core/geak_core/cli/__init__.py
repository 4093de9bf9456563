"""The ``geak-core`` command line.

Exit codes: 0 success, 1 the run (or a command) failed, 2 bad input, 130 stopped (Ctrl-C).

This package is the cli wing: the command group and most commands are here, the others in
its modules (``cli_eval``, ``cli_report``, ``cli_export``, ``cli_corpus``, ``cli_mcp``, ...),
the shared option conventions in ``cli_options``, how the process ends after a command that may
have started native threads in ``cli_exit``; ``python -m geak_core.cli`` runs ``__main__``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from geak_core import __version__
from geak_core.api.errors import GeakError, InputError, RecipeError
from geak_core.cli.cli_exit import NativeExit
from geak_core.cli.cli_options import (
    ConventionCommand,
    build_suite,
    json_flag,
    out_option,
    progress_echo,
    run_and_write,
)


class _Group(click.Group):
    """Turns GeakErrors into clean messages and their exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RecipeError as exc:
            for problem in exc.problems:
                click.echo(f"error: {problem.format()}", err=True)
            ctx.exit(exc.exit_code)
        except GeakError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C: what was done is kept (the run says how to resume)
            click.echo("stopped (Ctrl-C)", err=True)
            ctx.exit(130)


def _plugins():
    from geak_core.engine.plugins import get_plugin_manager

    return get_plugin_manager()


@click.group(cls=_Group, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="geak-core")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Agents that write, check and speed up Triton kernels, and a judge that cannot be fooled.

    Start with `geak-core run recipes/quickstart.toml` (offline, no key, no GPU needed).
    A stalled command prints every thread's stack to stderr on `kill -USR1 <pid>`.
    """
    if ctx.invoked_subcommand is None:  # bare `geak-core`: the help, which is no error
        click.echo(ctx.get_help())
        ctx.exit(0)
    if isinstance(ctx.obj, NativeExit):  # the console script's way out (``entry``)
        ctx.obj.command = ctx.invoked_subcommand
    _stacks_on_sigusr1()


def _stacks_on_sigusr1() -> None:
    """``kill -USR1`` prints every thread's stack to stderr (what a stalled run waits on)."""
    import faulthandler
    import signal

    usr1 = getattr(signal, "SIGUSR1", None)
    if usr1 is None or not hasattr(faulthandler, "register"):
        return
    try:
        faulthandler.register(usr1, all_threads=True, chain=False)
    except (RuntimeError, ValueError, OSError):  # no usable stderr, or not the main thread
        pass


# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------


@main.command(cls=ConventionCommand, short_help="Run the agent a RECIPE describes.")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--resume", "resume", metavar="RUN", help="Continue a stopped run (id, prefix or folder); refused (exit 2) "
                   "while another process runs it.")
@click.option("--dry-run", is_flag=True, help="Validate, resolve and list the work; run nothing.")
@click.option("--output-dir", type=click.Path(file_okay=False), help="Where run folders go (overrides [run] output_dir).")
@out_option("Also write the run's summary as JSON to this file (it is in the run folder's summary.json too).")
@json_flag("Print the run's summary as JSON on stdout (progress goes to stderr).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a recipe key (repeatable), VALUE in TOML syntax: --set agent.iterations=5 "
                   "--set 'suite.tasks=[\"softmax\"]'; validated like the file (a problem names the --set "
                   "KEY=VALUE it comes from), recorded with the run.")
@click.option("--limit", type=int, help="At most this many of the recipe's tasks, the first ones (suite.limit; "
              "a problem with it is reported as --limit N).")
@click.option("--allow-changes", is_flag=True,
              help="With --resume: continue even though the recipe now differs from the run's (other "
                   "than its folder, budget, LLM endpoint and executor); the change is recorded with the run.")
def run(recipe: str, resume: str | None, dry_run: bool, output_dir: str | None, out: str | None, as_json: bool,
        overrides: tuple[str, ...], limit: int | None, allow_changes: bool) -> None:
    """Run the agent described by RECIPE over its suite's tasks."""
    from geak_core.engine.recipe import load_recipe

    if not Path(recipe).exists():
        raise InputError(f"no such recipe: {recipe}")
    plugins = _plugins()
    pairs: list[Any] = [*overrides]  # each problem names what was typed: --set K=V, --limit N
    if limit is not None:
        pairs.append((f"suite.limit={limit}", f"--limit {limit}"))
    loaded = load_recipe(recipe, plugins, check_env=not dry_run, overrides=pairs)
    summary = run_and_write(loaded, plugins, output_dir=output_dir, out=out, as_json=as_json,
                            resume=resume, dry_run=dry_run, allow_changes=allow_changes)
    if summary is not None and summary.status == "failed":
        sys.exit(1)


# ---------------------------------------------------------------------------
# plugins, suites, tasks
# ---------------------------------------------------------------------------


def _options_help(schema: type | None) -> list[str]:
    import dataclasses
    import typing

    from geak_core.engine.recipe import type_name

    if schema is None:
        return []
    hints = typing.get_type_hints(schema)
    lines = []
    for f in dataclasses.fields(schema):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default = repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = repr(f.default_factory())
        else:
            default = "required"
        extra = " (environment variable name)" if f.metadata.get("env") else ""
        lines.append(f"{f.name}: {type_name(hints.get(f.name))} = {default}{extra}")
    return lines


@main.command("plugins", short_help="Installed plugins, their components and options.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--options/--no-options", default=True, help="Show each component's options.")
def plugins_command(as_json: bool, options: bool) -> None:
    """List installed plugins, what each provides and the options each component takes."""
    manager = _plugins()
    rows = []
    for info in manager.plugins.values():
        rows.append({
            "name": info.name,
            "module": info.module,
            "distribution": info.distribution,
            "version": info.version,
            "builtin": info.builtin,
            "error": info.error,
            "components": [
                {"kind": c.kind, "name": c.name, "description": c.description,
                 "options": _options_help(c.options)}
                for c in info.components
            ],
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        label = row["distribution"] or ("built-in" if row["builtin"] else row["module"])
        version = f" {row['version']}" if row["version"] else ""
        click.echo(f"{row['name']} ({label}{version})")
        if row["error"]:
            click.echo(f"  ERROR: {row['error']}")
        if not row["components"] and not row["error"]:
            click.echo("  (registers no components)")
        for comp in row["components"]:
            desc = f" - {comp['description']}" if comp["description"] else ""
            click.echo(f"  {comp['kind']}: {comp['name']}{desc}")
            if options:
                for line in comp["options"]:
                    click.echo(f"      {line}")


@main.command("suites")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def suites_command(as_json: bool) -> None:
    """List installed benchmark suites."""
    manager = _plugins()
    suites = sorted(manager.components("suite").items())
    if as_json:
        click.echo(json.dumps([{"name": name, "plugin": spec.plugin, "description": spec.description}
                               for name, spec in suites], indent=2))
        return
    for name, spec in suites:
        click.echo(f"{name}  ({spec.plugin}) {spec.description}")


@main.command("tasks", cls=ConventionCommand, retired_short={"-o": "--option"},
              short_help="List a suite's tasks and what each needs.")
@click.argument("suite")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Suite option, e.g. --option path=... (repeatable; -o is --out elsewhere, so not this).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def tasks_command(suite: str, options: tuple[str, ...], as_json: bool) -> None:
    """List SUITE's tasks with difficulty, category and needs (hardware, Triton features),
    then the task files it found but cannot read as tasks, with the reason of each."""
    built = build_suite(suite, options)
    tasks = built.tasks()
    if as_json:
        click.echo(json.dumps([t.prompt_view() for t in tasks], indent=2))
        return
    width = max((len(t.id) for t in tasks), default=4)
    click.echo(f"{'task':<{width}}  diff  {'category':<14}  requires")
    for t in tasks:
        needs = ", ".join(r.name for r in t.requires)
        if t.case_requires:
            some = "some cases: " + ", ".join(r.name for r in t.case_requires)
            needs = f"{needs}; {some}" if needs else some
        needs = needs or "-"
        click.echo(f"{t.id:<{width}}  {t.difficulty or '-':>4}  {t.category or '-':<14}  {needs}")
    click.echo(f"{len(tasks)} tasks")
    unusable = built.unusable()
    if unusable:
        click.echo(f"{len(unusable)} task file{'s' if len(unusable) != 1 else ''} left out, "
                   "not readable as tasks:")
        for task_id, why in sorted(unusable.items()):
            click.echo(f"  {task_id}: {why}")


@main.group("task")
def task_group() -> None:
    """Inspect one task."""


@task_group.command("show", cls=ConventionCommand, retired_short={"-o": "--option"},
                    short_help="What a model is shown of a task.")
@click.argument("ref", metavar="SUITE/ID")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Suite option, e.g. --option path=... (repeatable; -o is --out elsewhere, so not this).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def task_show(ref: str, options: tuple[str, ...], as_json: bool) -> None:
    """Print a task's instruction and candidate contract (what a model is shown)."""
    from geak_core.engine.tools import statement_text

    suite_name, sep, task_id = ref.partition("/")
    if not sep:
        raise InputError(f"expected SUITE/ID, got {ref!r}: {_suite_of_task(ref)}")
    task = build_suite(suite_name, options).get(task_id)
    view = task.prompt_view()
    if as_json:
        click.echo(json.dumps({"key": task.key, "id": task.id, "difficulty": task.difficulty,
                               "category": task.category, "instruction": task.instruction, **view},
                              indent=2, default=str))
        return
    click.echo(statement_text(task), nl=False)


def _suite_of_task(task_id: str) -> str:
    """A hint for a task named without its suite: the SUITE/ID it (or the closest id) has in
    the suites that build without options from data on disk (those need a path, and reading
    one can take long), else an example of the form."""
    import dataclasses
    import difflib

    keys: list[str] = []
    for name, spec in sorted(_plugins().components("suite").items()):
        paths = [f for f in dataclasses.fields(spec.options) if f.metadata.get("path")] if spec.options else []
        try:
            options = spec.options() if spec.options else None
            if any(getattr(options, f.name) for f in paths):
                continue  # its data comes from a folder on disk (a default path): not cheap
            keys += [f"{name}/{task.id}" for task in spec.build(options).tasks()]
        except Exception:  # a suite that needs options to build: not searched
            continue
    exact = [key for key in keys if key.partition("/")[2] == task_id]
    if exact:
        return "did you mean " + " or ".join(exact) + "?"
    close = difflib.get_close_matches(task_id, [key.partition("/")[2] for key in keys], n=1, cutoff=0.6)
    if close:
        return "did you mean " + next(key for key in keys if key.partition("/")[2] == close[0]) + "?"
    return "give SUITE/ID, e.g. rocm/softmax (`geak-core suites`, `geak-core tasks SUITE`)"


# ---------------------------------------------------------------------------
# recipe
# ---------------------------------------------------------------------------


@main.group("recipe")
def recipe_group() -> None:
    """Check and show recipes."""


@recipe_group.command("check", short_help="Validate RECIPE as run would, before its calls.")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--no-env", is_flag=True, help="Do not require API-key variables to be set.")
def recipe_check(recipe: str, no_env: bool) -> None:
    """Validate RECIPE as `run` would before its first LLM call: keys, types, input paths,
    the suite and its tasks, every component built, the executor reached (a Ray cluster
    answers); every problem is printed with file, line and key (exit 2)."""
    from geak_core.engine.recipe import load_recipe

    if not Path(recipe).exists():
        raise InputError(f"no such recipe: {recipe}")
    from geak_core.engine.agent import check_run

    plugins = _plugins()
    loaded = load_recipe(recipe, plugins, check_env=not no_env)
    tasks = check_run(loaded, plugins, llm=not no_env)  # --no-env: the LLM backend needs its key
    parts = [f"{section}={comp.name}" for section, comp in loaded.components.items()]
    click.echo(f"ok: {recipe} ({', '.join(parts)}; {len(tasks)} tasks)")


@recipe_group.command("show", short_help="Print RECIPE resolved, every default filled.")
@click.argument("recipe", type=click.Path(dir_okay=False))
def recipe_show(recipe: str) -> None:
    """Print RECIPE resolved: includes merged, every default filled."""
    from geak_core.engine.recipe import dump_toml, load_recipe

    if not Path(recipe).exists():
        raise InputError(f"no such recipe: {recipe}")
    loaded = load_recipe(recipe, _plugins(), check_env=False)
    click.echo(dump_toml(loaded.data), nl=False)


# ---------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------


@main.group("runs")
def runs_group() -> None:
    """List, inspect and remove stored runs."""


@runs_group.command("list", short_help="One line per run: id, status, counts.")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def runs_list(output_dir: str, as_json: bool) -> None:
    """One line per run: id, status, LLM calls, candidates, evaluations."""
    from geak_core.engine.store import list_runs

    rows = list_runs(output_dir)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no runs under {output_dir}")
        return
    columns = ("run", "status", "calls", "candidates", "evaluations")
    table = [[str(r.get(key, "-")) for key in ("run_id", "status", "llm_calls", "candidates", "evaluations")]
             for r in rows]
    widths = [max(len(cell) for cell in column) for column in zip(columns, *table, strict=True)]
    for cells in (columns, *table):  # text left, counts right, each column as wide as its widest cell
        click.echo("  ".join(cell.ljust(width) if index < 2 else cell.rjust(width)
                             for index, (cell, width) in enumerate(zip(cells, widths, strict=True))).rstrip())


@runs_group.command("show", short_help="One run: status, usage, summary and curves.")
@click.argument("run_ref", metavar="RUN")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def runs_show(run_ref: str, output_dir: str, as_json: bool) -> None:
    """Show one run: status, usage, its summary table and scaling curves."""
    from geak_core.api.model import RunSummary
    from geak_core.engine.report import format_summary
    from geak_core.engine.store import resolve_run, run_details

    run_dir = resolve_run(run_ref, output_dir)
    details = run_details(run_dir)
    summary = RunSummary.from_dict(details["summary"]) if details["summary"] is not None else None
    if as_json:
        click.echo(json.dumps(details, indent=2))
        return
    status, failure, counts, usage = details["status"], details["failure"], details["counts"], details["usage"]
    click.echo(f"run {run_dir.name}  [{status}]  {run_dir}")
    click.echo(
        f"llm calls {usage['calls']}, tokens {usage['prompt_tokens'] + usage['completion_tokens']}, "
        f"candidates {counts['candidates']}, evaluations {counts['evaluations']}"
    )
    if failure:
        click.echo(f"failed: {failure}")
    if summary:
        click.echo(format_summary(summary))
    elif status == "running":
        click.echo("no summary yet: the run is still going")
    else:
        click.echo(f"no summary: the run stopped ({status}); resume it with "
                   f"`geak-core run RECIPE --resume {run_dir}` (RECIPE: the recipe it was started with)")


@runs_group.command("log", short_help="Every prompt, reply, code and verdict of RUN.")
@click.argument("run_ref", metavar="RUN")
@click.option("--task", "task_id", help="Only this task's candidates.")
@click.option("--candidate", "candidate_id", help="Only this candidate (an id as `runs log` prints it).")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
def runs_log(run_ref: str, task_id: str | None, candidate_id: str | None, output_dir: str, as_json: bool) -> None:
    """What the model was asked and answered: every candidate's prompt, reply, extracted code,
    verdict and profiles, by task, lineage and round (paged in a terminal)."""
    from geak_core.engine.store import resolve_run
    from geak_core.reporting.transcript import entries, render, to_dict

    run_dir = resolve_run(run_ref, output_dir)
    items = entries(run_dir, task=task_id, candidate=candidate_id)
    if as_json:
        click.echo(json.dumps([to_dict(row) for row in items], indent=2, default=str))
        return
    if not items:
        click.echo(f"run {run_dir.name} has no candidates yet")
        return
    text = render(items, style=click.style)
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text)


@runs_group.command("rm", short_help="Remove runs: named, failed or old ones.")
@click.argument("run_refs", nargs=-1, metavar="RUN...")
@click.option("--failed", is_flag=True, help="Every failed run under --output-dir.")
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), metavar="DAYS",
              help="Runs under --output-dir last written more than DAYS days ago (with --failed: "
                   "failed runs that are).")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--yes", "-y", is_flag=True, help="Remove without asking.")
def runs_rm(run_refs: tuple[str, ...], failed: bool, older_than: float | None, output_dir: str, yes: bool) -> None:
    """Remove runs: the folders named (id, prefix or folder), every failed one (--failed), those
    not written for DAYS days (--older-than); a run another process is running is kept."""
    import time

    from geak_core.engine.store import (
        STORE_FILE,
        last_written,
        remove_run,
        resolve_run,
        stored_status,
    )

    if not (run_refs or failed or older_than is not None):
        raise InputError("name the runs to remove (RUN...), or select them with --failed or --older-than DAYS")
    chosen: dict[Path, str] = {}
    for ref in run_refs:
        run_dir = resolve_run(ref, output_dir)
        status = stored_status(run_dir)
        if status == "running":
            raise InputError(f"run {run_dir.name} is running; stop it first (nothing was removed)")
        chosen[run_dir] = status
    if failed or older_than is not None:
        base = Path(output_dir)
        cutoff = time.time() - older_than * 86400 if older_than is not None else None
        for run_dir in sorted(base.iterdir()) if base.is_dir() else []:
            if not (run_dir / STORE_FILE).exists() or run_dir in chosen:
                continue
            status = stored_status(run_dir)
            if failed and status != "failed":
                continue
            if cutoff is not None and last_written(run_dir) > cutoff:
                continue
            if status == "running":
                click.echo(f"kept {run_dir.name}: it is running", err=True)
                continue
            chosen[run_dir] = status
    if not chosen:
        click.echo("no runs to remove")
        return
    for run_dir, status in chosen.items():
        click.echo(f"{run_dir.name}  {status}  {run_dir}")
    if not yes:
        click.confirm(f"Remove these {len(chosen)} run{'s' if len(chosen) != 1 else ''}?", abort=True)
    for run_dir in chosen:
        remove_run(run_dir)
        click.echo(f"removed {run_dir.name} ({run_dir})")


@main.command("ablation", cls=ConventionCommand, short_help="Run recipes in turn, then one comparison table.")
@click.argument("recipes", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output-dir", type=click.Path(file_okay=False), help="Where run folders go.")
@out_option("Also write each recipe's summary as JSON to this file.")
@json_flag("Print each recipe's summary as JSON on stdout instead of the table (progress goes to stderr).")
def ablation_command(recipes: tuple[str, ...], output_dir: str | None, out: str | None, as_json: bool) -> None:
    """Run each recipe in turn (each run named by its recipe file, a line of figures each),
    then print one comparison table (one row per recipe), the speedup under each aggregate,
    the scaling curves (pass@k, accuracy after each round) and where each run is stored."""
    from geak_core.engine.agent import run_recipe
    from geak_core.engine.recipe import load_recipe
    from geak_core.engine.report import format_comparison

    plugins = _plugins()
    loaded = []
    for path in recipes:  # validate all before running any
        if not Path(path).exists():
            raise InputError(f"no such recipe: {path}")
        loaded.append(load_recipe(path, plugins))
    rows = []
    folders: list[tuple[str, Path]] = []
    echo = progress_echo(as_json)
    for path, recipe in zip(recipes, loaded, strict=True):
        if output_dir:
            recipe.run.output_dir = output_dir
        echo(f"== {path}")
        variant = Path(path).stem
        name = variant if recipe.run.name == variant else f"{recipe.run.name}-{variant}"
        summary = run_recipe(recipe, plugins, echo=echo, run_name=name, print_summary=False)
        assert summary is not None
        rows.append((variant, summary))
        folders.append((variant, Path(recipe.run.output_dir) / summary.run_id))
    document = json.dumps({name: s.to_dict() for name, s in rows}, indent=2, default=str)
    if out:
        from geak_core.engine.store import atomic_write

        atomic_write(out, document)
    if as_json:
        click.echo(document)
        return
    click.echo("")
    click.echo(format_comparison(rows))
    width = max(len(variant) for variant, _ in folders)
    click.echo("\nruns (each one's tables: geak-core runs show FOLDER):")
    for variant, folder in folders:
        click.echo(f"{variant:<{width}}  {folder}")


@main.command("compare", short_help="One comparison table for finished runs.")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("--output-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print each run's summary as JSON.")
def compare_command(runs: tuple[str, ...], output_dir: str, as_json: bool) -> None:
    """Print one comparison table for finished runs (id, prefix or folder), then the speedup
    under each aggregate and the scaling curves (pass@k, accuracy after each round)."""
    from geak_core.api.model import RunSummary
    from geak_core.engine.report import format_comparison
    from geak_core.engine.store import SUMMARY_FILE, resolve_run

    rows = []
    for ref in runs:
        run_dir = resolve_run(ref, output_dir)
        path = run_dir / SUMMARY_FILE
        if not path.exists():
            raise InputError(f"run {run_dir.name} has no summary yet (not finished)")
        rows.append((run_dir.name, RunSummary.from_dict(json.loads(path.read_text()))))
    if as_json:
        click.echo(json.dumps([{"run_id": name, "summary": summary.to_dict()} for name, summary in rows],
                              indent=2, default=str))
        return
    click.echo(format_comparison(rows, label="run"))


# ---------------------------------------------------------------------------
# doctor
# ---------------------------------------------------------------------------


@main.command(short_help="Versions, GPU or interpreter, sandbox, API keys.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def doctor(as_json: bool) -> None:
    """Python, torch and triton versions, GPU or interpreter mode, the judge's sandbox, for
    each LLM backend the key variable it reads by default and whether it is set (what
    `recipe check` requires of a recipe that leaves api_key_env out), and for each profiler
    whether it can run here (what `recipe check` requires of the one a recipe names)."""
    import platform

    facts: dict[str, Any] = {"geak_core": __version__, "python": platform.python_version(),
                             "python_executable": sys.executable, "gpus": []}
    lines = [f"geak-core {__version__}, Python {platform.python_version()} ({sys.executable})"]
    try:
        import torch

        facts.update(torch=torch.__version__, cuda=torch.version.cuda, hip=torch.version.hip)
        lines.append(f"torch {torch.__version__} (cuda {torch.version.cuda}, hip {torch.version.hip})")
        if torch.cuda.is_available():
            facts["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            lines += [f"gpu {i}: {name}" for i, name in enumerate(facts["gpus"])]
            facts["mode"] = "gpu"
            lines.append("mode: gpu (kernels compiled and timed)")
        else:
            facts["mode"] = "cpu-interpreter"
            lines.append("gpu: none; mode: cpu-interpreter (TRITON_INTERPRET=1, correctness only)")
    except Exception as exc:
        facts["torch"] = f"unavailable ({exc})"
        lines.append(f"torch: unavailable ({exc})")
    try:
        import triton

        facts["triton"] = triton.__version__
        lines.append(f"triton {triton.__version__}")
    except Exception as exc:
        facts["triton"] = f"unavailable ({exc})"
        lines.append(f"triton: unavailable ({exc})")
    facts["sandbox"] = _describe_sandbox()
    lines += facts["sandbox"]
    manager = _plugins()
    broken = [p for p in manager.plugins.values() if p.error]
    facts["plugins_loaded"] = len(manager.plugins)
    facts["plugin_errors"] = {p.name: p.error for p in broken}
    lines.append(f"plugins: {len(manager.plugins)} loaded, {len(broken)} with errors")
    lines += [f"  {p.name}: {p.error}" for p in broken]
    backends, notes = _backend_keys(manager)
    facts["backends"] = backends
    lines += [f"backend {name}: {state}{notes[name]}" for name, state in backends.items()]
    facts["profilers"] = _profiler_states(manager)
    lines += [f"profiler {name}: " + ("usable here" if not reasons else "not usable here: " + "; ".join(reasons))
              for name, reasons in facts["profilers"].items()]
    if as_json:
        click.echo(json.dumps(facts, indent=2, default=str))
        return
    for line in lines:
        click.echo(line)


def _backend_keys(manager: Any) -> tuple[dict[str, str], dict[str, str]]:
    """For each LLM backend, the key variables a recipe that leaves its options at their
    defaults reads and whether each is set ("OPENAI_API_KEY not set"), by the resolution
    `recipe check` applies (``default_env_requirements``); and a note for the text output."""
    import dataclasses

    from geak_core.engine.recipe import default_env_requirements

    states: dict[str, str] = {}
    notes: dict[str, str] = {}
    for name, spec in sorted(manager.components("llm_backend").items()):
        env_keys = [f.name for f in dataclasses.fields(spec.options) if f.metadata.get("env")] \
            if spec.options else []
        named_by = f"{' or '.join(env_keys)} names another" if env_keys else ""
        needed = default_env_requirements(spec.options)
        if needed is None:
            states[name] = f"key variable depends on the recipe ({', '.join(env_keys) or 'its options'})"
            notes[name] = ""
        elif needed:
            states[name] = "; ".join(f"{var} {'set' if os.environ.get(var) else 'not set'}"
                                     for _, var, _ in needed)
            notes[name] = f" (read by default{'; ' + named_by if named_by else ''})"
        elif env_keys:
            states[name] = "no key by default"
            notes[name] = f" ({', '.join(env_keys)} names one per recipe)"
        else:
            states[name] = "no key needed"
            notes[name] = ""
    return states, notes


def _profiler_states(manager: Any) -> dict[str, list[str]]:
    """For each installed profiler (but core's ``none``), built with its default options, why
    it cannot run on this machine (its ``unusable()``; empty: it can)."""
    states: dict[str, list[str]] = {}
    for name, spec in sorted(manager.components("profiler").items()):
        if name == "none":
            continue
        try:
            states[name] = list(spec.build(spec.options() if spec.options else None).unusable())
        except Exception as exc:  # a profiler that cannot even be built is not usable either
            states[name] = [f"it cannot be built: {type(exc).__name__}: {exc}"]
    return states


def _describe_sandbox() -> list[str]:
    """What confines the judge's children here (docs/evaluator.md, threat model), a line each."""
    from geak_core.kit.confinement import describe_abi, landlock_abi
    from geak_core.kit.limits import describe_process_limit, physical_memory_mb
    from geak_core.kit.sandbox import namespaces_available

    abi = landlock_abi()
    namespaces = namespaces_available()
    return [
        f"sandbox: confinement {describe_abi(abi)}",
        "sandbox: namespaces " + ("available: children get their own user, PID, network and mount "
                                  "namespaces (no network, no other process, die with the judge)"
                                  if namespaces else "unavailable: children share the judge's network "
                                  "and process table; a grandchild in a session of its own can outlive "
                                  "a killed judge"),
        f"sandbox: host memory per child RLIMIT_DATA (default {max(8192, physical_memory_mb() // 2)} MiB); "
        f"processes and threads: {describe_process_limit(namespaces)}; open files RLIMIT_NOFILE",
        "sandbox: environment by allow-list (geak_core.kit.confinement.ENV_ALLOWED); "
        "children start from one long-lived thread with a parent-death signal",
    ]


def _add_optional_commands() -> None:
    try:
        from geak_core.cli.cli_eval import eval_command
    except ImportError:
        return
    main.add_command(eval_command, "eval")
    from geak_core.cli.cli_tune import tune_command

    main.add_command(tune_command, "tune")
    from geak_core.cli.cli_profile import profile_command

    main.add_command(profile_command, "profile")
    from geak_core.cli.cli_export import export_command
    from geak_core.cli.cli_report import report_command

    main.add_command(report_command, "report")
    main.add_command(export_command, "export")
    from geak_core.cli.cli_optimize import optimize_command

    main.add_command(optimize_command, "optimize")
    from geak_core.cli.cli_export_kernel import export_kernel_command

    main.add_command(export_kernel_command, "export-kernel")
    from geak_core.cli.cli_mcp import mcp_command

    main.add_command(mcp_command, "mcp")


_add_optional_commands()


def _add_corpus_commands() -> None:
    from geak_core.cli.cli_corpus import corpus_group

    main.add_command(corpus_group)


_add_corpus_commands()


def entry() -> None:
    """Console-script entry: adds plugin-provided commands, then runs the CLI. A command that
    may have started native threads here leaves through ``os._exit`` once Python's shutdown
    has run (``cli_exit``), with the status it decided."""
    exit_path = NativeExit().install()
    try:
        _plugins().add_commands(main)
    except GeakError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    try:
        main(obj=exit_path)
    except SystemExit as exc:
        exit_path.ended(exc.code)
        raise

