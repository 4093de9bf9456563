"""Errors that carry a location, so every message can say where the problem is, and the
"did you mean" hint (``suggest``) that a message about an unknown name ends with."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GeakError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class InputError(GeakError):
    """Bad input from the user: a recipe, a file, an unknown name. Exit code 2."""

    exit_code = 2


class RecipeError(InputError):
    """One or more problems in a recipe, each with file, line and dotted key."""

    def __init__(self, problems: list[RecipeProblem]):
        self.problems = problems
        super().__init__("\n".join(p.format() for p in problems))


class RecipeProblem:
    def __init__(self, file: str, line: int | None, key: str, message: str, hint: str = ""):
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        self.hint = hint

    def format(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: [{self.key}] {self.message}" if self.key else f"{where}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def __repr__(self) -> str:
        return f"RecipeProblem({self.format()!r})"


class OptionError(InputError):
    """A component's option is unusable (``key`` names it in the component's section), found
    while building the component: a cluster address that does not answer, say."""

    def __init__(self, key: str, message: str, hint: str = ""):
        self.key = key
        self.message = message
        self.hint = hint
        super().__init__(f"{key}: {message}" + (f" ({hint})" if hint else ""))


class PluginError(GeakError):
    """A plugin misbehaved: duplicate names, a bad registration."""

    exit_code = 2


class UnknownComponentError(InputError):
    pass


def suggest(name: str, choices: Iterable[str]) -> str:
    """A "did you mean" hint, or a list of valid choices."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    if choices:
        return "valid: " + ", ".join(repr(c) for c in choices)
    return "none are installed"
