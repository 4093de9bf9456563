"""Components that mean "leave this module out": the ablation switches.

They are registered like every other plugin's components, so ``retriever =
"none"`` or ``optimizer = "none"`` in a recipe is an ordinary choice.
"""

from __future__ import annotations

from typing import Any

from geak_core.components import Example, RetrievalQuery
from geak_core.hookspecs import hookimpl


class NoRetriever:
    """Retrieves nothing: the 0-shot ablation."""

    def __init__(self, options: Any = None) -> None:
        pass

    def retrieve(self, query: RetrievalQuery) -> list[Example]:
        return []


class NoOptimizer:
    """Never asks for optimisation: lineages stop once a candidate is correct."""

    proposals = 0

    def __init__(self, options: Any = None) -> None:
        pass

    def record(self, task_id: str, candidate: Any, result: Any) -> None:
        return None

    def context(self, task_id: str) -> dict[str, Any]:
        return {"archive": []}


@hookimpl
def geak_register_retrievers(register):  # type: ignore[no-untyped-def]
    register("none", NoRetriever, description="no one-shot example (0-shot ablation)")


@hookimpl
def geak_register_optimizers(register):  # type: ignore[no-untyped-def]
    register("none", NoOptimizer, description="no optimisation rounds")
