"""The module paths geak_core had before its wings, kept importing until 1.0.

Every module once sat in ``geak_core/`` itself; each now lives in one wing (``api``,
``kit``, ``engine``, ``reporting``, ``cli``: docs/architecture.md). ``MOVED`` maps each old
dotted name to its module's new one, and ``MovedModules``, on ``sys.meta_path`` from the
moment ``geak_core`` is imported, answers for the old names: importing one warns
(``DeprecationWarning``, pointing at the importing line) and gives the moved module itself,
the very object the new name gives. So ``import geak_core.agent``, ``from geak_core.agent
import X``, ``importlib.import_module("geak_core.agent")`` and
``mock.patch("geak_core.agent.X")`` all reach (and patch) the module the code runs.

There is no file at any old path: a file there would be found first and be a second copy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

_WINGS = {
    "api": ("astutil", "components", "errors", "extract", "harness", "hookspecs", "lineage", "llm",
            "model", "scaling", "tasks"),
    "kit": ("code_metrics", "confinement", "limits", "llm_http", "sandbox", "tensorio"),
    "engine": ("agent", "builtin", "category_view", "hardware", "plugins", "progress", "prompts",
               "recipe", "recording", "report", "selection", "store"),
    "reporting": ("export", "html_report", "rundata", "transcript"),
    "cli": ("cli_corpus", "cli_eval", "cli_export", "cli_options", "cli_report"),
}
# geak_core.cli kept its name: it is the cli wing's package, the ``geak-core`` command group.
MOVED: dict[str, str] = {
    f"geak_core.{name}": f"geak_core.{wing}.{name}" for wing, names in _WINGS.items() for name in names
}


def moved_message(old: str) -> str:
    return f"{old} moved to {MOVED[old]}; the old path goes in 1.0"


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each old name of ``MOVED`` and loads it as its new module."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder, replaced by exec_module

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns what sys.modules holds under the name once the module is
        # executed: the new module, whose own __spec__ and __name__ stay untouched.
        old = module.__name__
        warnings.warn(moved_message(old), DeprecationWarning, stacklevel=2)
        sys.modules[old] = importlib.import_module(MOVED[old])


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once): done when ``geak_core`` is imported."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())


install()

__all__ = ["MOVED", "MovedModules", "install", "moved_message"]
