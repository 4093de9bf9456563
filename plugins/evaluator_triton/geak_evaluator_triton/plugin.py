"""Hook implementations of geak_evaluator_triton: the ``triton`` evaluator."""

from __future__ import annotations

from typing import Any

from geak_core import hookimpl

from geak_evaluator_triton.options import TritonEvaluatorOptions


def build_evaluator(options: TritonEvaluatorOptions | None = None) -> Any:
    from geak_evaluator_triton.evaluator import TritonEvaluator

    return TritonEvaluator(options)


@hookimpl
def geak_register_evaluators(register):  # type: ignore[no-untyped-def]
    register(
        "triton",
        build_evaluator,
        options=TritonEvaluatorOptions,
        description="sandboxed two-stage correctness checks, anti-cheat guards and GPU timing "
        "against the task's reference (Triton interpreter on CPU)",
    )
