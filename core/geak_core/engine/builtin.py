"""Core's own components: the ablation switches and the default executor.

They are registered like every other plugin's components, so ``retriever =
"none"``, ``optimizer = "none"``, ``[tuner] name = "none"``, ``[profiler] name = "none"`` or
``[executor] name = "local"`` in a recipe is an ordinary choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from geak_core.api.components import (
    ComponentSpec,
    Evaluator,
    Example,
    ExecutorBase,
    OptimizerBase,
    ProfilerBase,
    RetrievalQuery,
    RetrieverBase,
    TuneBudget,
    TunerBase,
    TuneResult,
)
from geak_core.api.hookspecs import hookimpl
from geak_core.api.profiling import KernelCounters, ProfileLaunch


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


class NoProfiler(ProfilerBase):
    """Never profiles: the model sees latencies and the judge's roofline figures only."""

    def __init__(self, options: Any = None) -> None:
        pass

    def launch(self) -> ProfileLaunch:
        return ProfileLaunch()

    def read(self, out: str, output: str) -> list[KernelCounters]:
        return []


@dataclass
class LocalExecutorOptions:
    """The ``local`` executor (a recipe's ``[executor]`` table, ``--executor-option``)."""

    # Judges on this machine. 0: one judge process per GPU where more than one GPU is
    # visible, else the judge in this process; 1: the judge in this process, for all the
    # GPUs; N > 1: N judge processes sharing the GPUs evenly (or, without GPUs, each with
    # the evaluator's CPU workers). See docs/executors.md.
    judges: int = 0
    # A job whose judge process died is sent to another, up to this many tries in all.
    max_attempts: int = 3
    start_timeout_s: float = 300.0  # the most a judge process may take to build its evaluator

    def __post_init__(self) -> None:
        problems = []
        if self.judges < 0:
            problems.append("judges must be >= 0 (0: one judge process per GPU)")
        if self.max_attempts < 1:
            problems.append("max_attempts must be >= 1")
        if self.start_timeout_s <= 0:
            problems.append("start_timeout_s must be > 0")
        if problems:
            raise ValueError("; ".join(problems))


class LocalExecutor(ExecutorBase):
    """Judges on this machine: the evaluator is built in this process, or, with several
    GPUs (``judges``), in one judge process per GPU; either way its sandboxed children run
    here (one judge slot per local GPU, or CPU workers)."""

    def __init__(self, options: LocalExecutorOptions | None = None) -> None:
        self.settings = options or LocalExecutorOptions()

    def evaluator(self, spec: ComponentSpec, options: Any) -> Evaluator:
        count = self.settings.judges
        if count == 1:
            return spec.build(options)
        from geak_core.engine.judge_processes import ProcessJudges, shares, visible_gpus

        vendor, gpus = visible_gpus(options)
        if count == 0:
            if len(gpus) <= 1:
                return spec.build(options)
            count = len(gpus)
        return ProcessJudges(spec, options, shares(vendor, gpus, count), self.settings.max_attempts,
                             self.settings.start_timeout_s)


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
def geak_register_profilers(register):  # type: ignore[no-untyped-def]
    register("none", NoProfiler, description="no profiling (the default)")


@hookimpl
def geak_register_executors(register):  # type: ignore[no-untyped-def]
    register("local", LocalExecutor, options=LocalExecutorOptions,
             description="judge on this machine (the default): in this process, or in one judge "
                         "process per GPU where there are several; candidates in sandboxed children")
