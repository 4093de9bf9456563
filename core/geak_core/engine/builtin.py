"""Core's own components: the ablation switches and the default executor.

They are registered like every other plugin's components, so ``retriever =
"none"``, ``optimizer = "none"``, ``[tuner] name = "none"`` or ``[executor] name =
"local"`` in a recipe is an ordinary choice.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.components import (
    ComponentSpec,
    Evaluator,
    Example,
    ExecutorBase,
    OptimizerBase,
    RetrievalQuery,
    RetrieverBase,
    TuneBudget,
    TunerBase,
    TuneResult,
)
from geak_core.api.hookspecs import hookimpl


class NoRetriever(RetrieverBase):
    """Retrieves nothing: the 0-shot ablation."""

    def __init__(self, options: Any = None) -> None:
        pass

    def retrieve(self, query: RetrievalQuery) -> list[Example]:
        return []


class NoOptimizer(OptimizerBase):
    """Never asks for optimisation: lineages stop once a candidate is correct."""

    proposals = 0

    def __init__(self, options: Any = None) -> None:
        pass

    def record(self, task_id: str, candidate: Any, result: Any) -> None:
        return None

    def context(self, task_id: str) -> dict[str, Any]:
        return {"archive": []}


class NoTuner(TunerBase):
    """Never tunes: a candidate's launch configuration is the one its code was written with."""

    def __init__(self, options: Any = None) -> None:
        pass

    def tune(self, task: Any, candidate: Any, judge: Any, budget: TuneBudget) -> TuneResult:
        return TuneResult()


class LocalExecutor(ExecutorBase):
    """Judges in this process: the evaluator is built here and starts its sandboxed
    children on this machine (one judge slot per local GPU, or CPU workers)."""

    def __init__(self, options: Any = None) -> None:
        pass

    def evaluator(self, spec: ComponentSpec, options: Any) -> Evaluator:
        return spec.build(options)


@hookimpl
def geak_register_retrievers(register):  # type: ignore[no-untyped-def]
    register("none", NoRetriever, description="no one-shot example (0-shot ablation)")


@hookimpl
def geak_register_optimizers(register):  # type: ignore[no-untyped-def]
    register("none", NoOptimizer, description="no optimisation rounds")


@hookimpl
def geak_register_tuners(register):  # type: ignore[no-untyped-def]
    register("none", NoTuner, description="no launch-configuration tuning")


@hookimpl
def geak_register_executors(register):  # type: ignore[no-untyped-def]
    register("local", LocalExecutor, description="judge on this machine, in this process's "
             "sandboxed children (the default)")
