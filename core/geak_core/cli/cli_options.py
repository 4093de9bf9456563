"""One convention for the command line, and errors for the spellings it replaced; and the
suite a command names with its ``--option KEY=VALUE`` pairs (``build_suite``).

Every command that shows data takes ``--json`` (a flag: JSON on stdout, progress on
stderr); every command that writes a file takes ``-o/--out PATH``. Earlier spellings
(``--json FILE`` on ``run``, ``ablation`` and ``eval``; ``--output`` on ``report``; ``-o`` for
``--option`` on ``tasks`` and ``task show``) stop with an error that names the current one
instead of being read as something else.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from geak_core.api.errors import GeakError

FILE_SUFFIXES = (".json", ".jsonl")


def old_spelling(args: list[str], renamed: dict[str, str], retired_short: dict[str, str] | None = None) -> str:
    """Why ``args`` use a replaced spelling ("" when they don't): ``--json`` followed by a
    ``.json``/``.jsonl`` path (or ``--json=PATH``), an option in ``renamed`` (old -> new), or
    a short option in ``retired_short`` (``-o`` -> ``--option``: ``-o`` is ``--out`` elsewhere),
    alone or glued to its value (``-oKEY=VALUE``)."""
    for index, arg in enumerate(args):
        if arg == "--":
            break
        for short, long in (retired_short or {}).items():
            if arg == short or (arg.startswith(short) and not arg.startswith("--")):
                value = arg[len(short):] or (args[index + 1] if index + 1 < len(args) else "VALUE")
                return (f"{short} is not {long} here ({short} means --out PATH elsewhere): "
                        f"write {long} {value}")
        value = None
        if arg.startswith("--json="):
            value = arg.split("=", 1)[1]
        elif arg == "--json" and index + 1 < len(args) and not args[index + 1].startswith("-") \
                and args[index + 1].endswith(FILE_SUFFIXES):
            value = args[index + 1]
        if value is not None:
            return (f"--json takes no file any more: alone it prints JSON on stdout; "
                    f"write the file with -o/--out {value}")
        name = arg.split("=", 1)[0]
        if name in renamed:
            return f"{name} is now {renamed[name]}"
    return ""


class ConventionCommand(click.Command):
    """A click command that refuses the replaced spellings of its options (``renamed``:
    old option -> its current spelling; ``retired_short``: a short form dropped -> the long
    option it stood for) with a usage error (exit 2) naming the current one."""

    def __init__(self, *args: Any, renamed: dict[str, str] | None = None,
                 retired_short: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.renamed = dict(renamed or {})
        self.retired_short = dict(retired_short or {})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        problem = old_spelling(args, self.renamed, self.retired_short)
        if problem:
            raise click.UsageError(problem, ctx=ctx)
        return super().parse_args(ctx, args)


def out_option(help_text: str) -> Any:
    """``-o/--out PATH``: the file a command writes."""
    return click.option("-o", "--out", "out", type=click.Path(dir_okay=False), help=help_text)


def json_flag(help_text: str = "Print JSON on stdout (progress goes to stderr).") -> Any:
    """``--json``: the command's data as JSON on stdout (see ``progress_echo``)."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def progress_echo(as_json: bool) -> Any:
    """Where a command's progress lines go: stderr when ``--json`` gives stdout to its JSON."""
    if as_json:
        return lambda message="", **kwargs: click.echo(message, err=True)
    return click.echo


def run_and_write(loaded: Any, plugins: Any, *, output_dir: str | None, out: str | None,
                  as_json: bool, **run_options: Any) -> Any:
    """Run a loaded recipe as ``run`` and ``optimize`` do: ``--output-dir`` over the
    recipe's, progress on stderr under ``--json``, the summary written to ``-o/--out`` and
    printed as JSON under ``--json``. Returns the summary (None for a dry run)."""
    import json

    from geak_core.engine.agent import run_recipe
    from geak_core.engine.store import atomic_write

    if output_dir:
        loaded.run.output_dir = output_dir
        loaded.data["run"]["output_dir"] = output_dir
    summary = run_recipe(loaded, plugins, echo=progress_echo(as_json), **run_options)
    if summary is None:
        return None
    if out:
        atomic_write(out, json.dumps(summary.to_dict(), indent=2))
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=2, default=str))
    return summary


def build_suite(name: str, options_kv: tuple[str, ...] = ()) -> Any:
    """The suite ``name``, built with its options given as ``KEY=VALUE`` (``--option``),
    checked like a recipe's: ``tasks``, ``task show`` and ``corpus audit`` take them."""
    return build_with_options("suite", name, options_kv, "--option")


def build_with_options(kind: str, name: str, pairs: Iterable[str], flag: str) -> Any:
    """The registered ``kind`` component ``name`` with the ``KEY=VALUE`` options given by
    ``flag`` (VALUE in TOML syntax; a bare word is a string), checked against its options as
    the recipe's section of that kind is."""
    from geak_core.api.components import KIND_BY_NAME
    from geak_core.api.errors import InputError, RecipeError
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import _Source, key_value, validate_options

    manager = get_plugin_manager()
    spec = manager.spec(kind, name)
    values: dict[str, Any] = {}
    for pair in pairs:
        parsed = key_value(pair)
        if parsed is None:
            raise InputError(f"{flag} takes KEY=VALUE, got {pair!r}")
        values[parsed[0]] = parsed[1]
    problems: list[Any] = []
    source = _Source({"": (flag, None)})
    options = validate_options(spec.options, values, KIND_BY_NAME[kind].section, source, problems)
    if problems:
        raise RecipeError(problems)
    return spec.build(options)


@contextmanager
def exit_on_bad_input() -> Iterator[None]:
    """A command's set-up (reading its input, building its judge): an error there is printed
    on a line of its own and ends the command with the error's exit status (2 for bad input)."""
    try:
        yield
    except GeakError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (ValueError, TypeError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
