"""``geak-core optimize FILE_OR_FOLDER``: the agent on your own operators, in one command.

The target is a task file in KernelBench's format (or a folder of them), read by the
``local`` suite; the recipe is ``--recipe R`` or the bundled default (the GEAK paper's
modules, ``assets/optimize.toml``) with its ``[suite]`` replaced by the local suite on the
target. The LLM of the default recipe is ``--backend``/``--model``, else the first
provider whose API key is set. At the end each task's winner is named: the file under the
run's ``best/`` and the command that turns it into an installable PyTorch op.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from geak_core.api.errors import InputError
from geak_core.cli.cli_options import (
    ConventionCommand,
    build_with_options,
    json_flag,
    out_option,
    progress_echo,
    run_and_write,
)

DEFAULT_RECIPE = Path(__file__).parent / "assets" / "optimize.toml"
ORIGIN = "geak-core optimize"
# (backend, default model, the variable that holds its key), in the order they are looked for
PROVIDERS = (
    ("openai", "gpt-4.1", "OPENAI_API_KEY"),
    ("anthropic", "claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ("gemini", "gemini-2.5-pro", "GEMINI_API_KEY"),
)


def default_llm(backend: str | None, model: str | None) -> dict[str, object]:
    """The ``[llm]`` table of the default recipe."""
    if backend is None:
        found = next((p for p in PROVIDERS if os.environ.get(p[2])), None)
        if found is None:
            names = ", ".join(p[2] for p in PROVIDERS)
            raise InputError(f"no LLM configured: set one of {names}, pass --backend (and "
                             "--model), or give a recipe with --recipe")
        backend = found[0]
    if model is None:
        known = {p[0]: p[1] for p in PROVIDERS}
        if backend not in known:
            raise InputError(f"--backend {backend}: name the model too (--model)")
        model = known[backend]
    return {"backend": backend, "model": model, "temperature": 1.0}


@click.command("optimize", cls=ConventionCommand, short_help="Make your own operators faster.")
@click.argument("target", type=click.Path(exists=False))
@click.option("--recipe", type=click.Path(dir_okay=False),
              help="A recipe to run instead of the default (its [suite] is replaced by the "
                   "local suite on TARGET).")
@click.option("--backend", help="The default recipe's LLM backend (default: the first of "
                                "openai, anthropic, gemini whose API key is set).")
@click.option("--model", help="The default recipe's model (default: the backend's usual one).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Set a recipe key (repeatable), as with `geak-core run`: --set "
                   "agent.lineages=2.")
@click.option("--output-dir", type=click.Path(file_okay=False), help="Where run folders go.")
@click.option("--resume", metavar="RUN", help="Continue a stopped optimize run (id, prefix or "
                                               "folder) with the same TARGET and recipe.")
@out_option("Also write the run's summary as JSON to this file.")
@json_flag("Print the run's summary as JSON on stdout (progress goes to stderr).")
def optimize_command(target: str, recipe: str | None, backend: str | None, model: str | None,
                     overrides: tuple[str, ...], output_dir: str | None, resume: str | None,
                     out: str | None, as_json: bool) -> None:
    """Make the operators of TARGET faster: a task file in KernelBench's format (class Model,
    get_inputs, get_init_inputs; optionally your Triton ModelNew to beat) or a folder of
    them. Prints where each winner is."""
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import load_recipe

    path = Path(target).expanduser()
    if not path.exists():
        raise InputError(f"{target}: no such file or folder")
    if recipe is not None and not Path(recipe).is_file():
        raise InputError(f"no such recipe: {recipe}")
    if recipe is not None and (backend or model):
        raise InputError("--backend and --model set the default recipe's LLM; with --recipe, "
                         "use --set llm.backend=... / --set llm.model=...")
    sections = {"suite": ({"name": "local", "path": str(path.resolve())}, ORIGIN)}
    if recipe is None:
        sections["llm"] = (default_llm(backend, model), ORIGIN)
    plugins = get_plugin_manager()
    suite = build_with_options("suite", "local", [f"path={json.dumps(str(path.resolve()))}"],
                               "TARGET")
    unusable = suite.unusable()
    for why in unusable.values():
        click.echo(f"not a task: {why}", err=True)
    if not suite.tasks():
        raise InputError(f"{target}: no usable task file ({len(unusable)} unusable, above)")
    loaded = load_recipe(recipe or DEFAULT_RECIPE, plugins, overrides=list(overrides),
                         sections=sections)
    summary = run_and_write(loaded, plugins, output_dir=output_dir, out=out, as_json=as_json,
                            resume=resume)
    echo = progress_echo(as_json)
    echo("")
    run_dir = Path(loaded.run.output_dir) / summary.run_id
    for task in summary.tasks:
        if task.correct and task.best_file:
            speed = (f", {task.best_speedup:.2f}x" if task.best_speedup else
                     " (not timed: correctness only)")
            echo(f"winner of {task.task_id}{speed}: {task.best_file}")
            echo(f"  as a PyTorch op: geak-core export-kernel {run_dir} "
                 f"--task {task.task_id} -o {task.task_id}_op")
        elif task.skipped_reason:
            echo(f"{task.task_id}: not run: {task.skipped_reason}")
        else:
            echo(f"{task.task_id}: no correct kernel in this run")
    for why in unusable.values():
        echo(f"not a task: {why}")
    if summary.status == "failed":
        sys.exit(1)
