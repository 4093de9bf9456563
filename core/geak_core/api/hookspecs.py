"""Every hook a geak plugin can implement.

Plugins are modules (or objects) that carry functions decorated with
``geak_core.hookimpl`` and named after the specifications below. They are
found through the ``geak`` entry-point group.

Two families:

* **register hooks** (``geak_register_*``) fire once, when the plugin manager
  builds its registries. Each receives a ``register`` callable and may call it
  any number of times::

      register(name, factory, options=OptionsDataclass, description="...")

  ``factory(options)`` builds the component from its validated options (an
  instance of the ``options`` dataclass, or ``None`` when the component takes
  none). The protocol each component must satisfy lives in
  ``geak_core.api.components``.
* **observer hooks** (``geak_run_started`` ... ``geak_run_finished``) fire
  during a run for every implementation; their return values are ignored. An
  observer that raises is logged and does not stop the run.

This module is public API: signatures change only with a major version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

from geak_core.api.components import COMPONENT_KINDS, ComponentKind, Register

if TYPE_CHECKING:
    import click

    from geak_core.api.model import Candidate, EvalResult, RunSummary, TaskSummary
    from geak_core.api.tasks import Task

PROJECT = "geak"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---------------------------------------------------------------------------
# Registration: called once while the plugin manager builds its registries.
# One hook per entry of ``components.COMPONENT_KINDS`` (its ``hook`` field), each
# ``(register: Register) -> None``, generated below so that a new kind is one entry
# there; docs/plugins.md lists them (tests/core/test_component_kinds.py keeps it in step).
# ---------------------------------------------------------------------------


def _register_hookspec(kind: ComponentKind) -> Callable[..., None]:
    def spec(register: Register) -> None:
        pass

    spec.__name__ = spec.__qualname__ = kind.hook
    spec.__module__ = __name__
    spec.__doc__ = (
        f"Register {kind.plural} (``components.{kind.protocol.__name__}``), named in a recipe by "
        f"``[{kind.section}] {kind.key}``."
    )
    return hookspec(spec)


for _kind in COMPONENT_KINDS:
    globals()[_kind.hook] = _register_hookspec(_kind)
del _kind


@hookspec
def geak_register_commands(cli: click.Group) -> None:
    """Add click commands or groups to the ``geak-core`` command line."""


# ---------------------------------------------------------------------------
# Observers: called during a run, every implementation, results ignored.
# ---------------------------------------------------------------------------


@hookspec
def geak_run_started(run_id: str, run_dir: str, recipe: dict[str, Any]) -> None:
    """A run (new or resumed) is about to process its first task."""


@hookspec
def geak_candidate_evaluated(
    run_id: str, task: Task, candidate: Candidate, result: EvalResult
) -> None:
    """The evaluator has judged one candidate; ``result`` is already stored."""


@hookspec
def geak_task_finished(run_id: str, task: Task, summary: TaskSummary) -> None:
    """Every lineage of ``task`` has stopped; ``summary`` holds its best candidate."""


@hookspec
def geak_run_finished(run_id: str, run_dir: str, summary: RunSummary) -> None:
    """The run has stopped (finished, budget exhausted or failed); the summary is written."""
