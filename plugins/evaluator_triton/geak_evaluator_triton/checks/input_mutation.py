"""Check: the candidate leaves its inputs unchanged.

A candidate that writes into its inputs could leave there what a later call
(or the comparison) reads instead of computing it.

Detection (child): bitwise copies of every input tensor (:func:`snapshot_inputs`)
before each correctness run, compared after it (:func:`mutated_inputs`); a
timed case's inputs (up to ``timed_calls.INPUT_COPY_BYTES``) are copied before
its timing and compared at its end. The changed inputs' paths travel as
``mutated`` in each run's checks (:class:`~geak_evaluator_triton.protocol.RunChecks`)
and in the ``case_done`` frame (:class:`~geak_evaluator_triton.protocol.CaseDoneFrame`).

Interpretation (judge, :func:`report`): any changed input rejects the
candidate (stage ``anticheat``), reported once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def snapshot_inputs(inputs: Any) -> Any:
    """Bitwise copies of every tensor in ``inputs`` (to detect mutation)."""
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.detach().clone()
    if isinstance(inputs, dict):
        return {k: snapshot_inputs(v) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(snapshot_inputs(v) for v in inputs) if isinstance(inputs, list) else tuple(
            snapshot_inputs(v) for v in inputs
        )
    return None


def mutated_inputs(before: Any, after: Any, path: str = "") -> list[str]:
    import torch

    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return [path or "input"]
        if before.numel() == 0:
            return []
        a = after.detach().contiguous().reshape(-1).view(torch.uint8)
        b = before.contiguous().reshape(-1).view(torch.uint8)
        return [] if torch.equal(a, b) else [path or "input"]
    if isinstance(before, dict):
        out: list[str] = []
        for key, value in before.items():
            out += mutated_inputs(value, after.get(key) if isinstance(after, dict) else None,
                                  f"{path}.{key}" if path else str(key))
        return out
    if isinstance(before, (list, tuple)):
        out = []
        for i, value in enumerate(before):
            other = after[i] if isinstance(after, (list, tuple)) and i < len(after) else None
            out += mutated_inputs(value, other, f"{path}[{i}]")
        return out
    return []


def report(verdict: Verdict, when: str, mutated: list[str]) -> None:
    """Reject when the inputs at ``mutated`` changed ``when`` (a run, a timed case)."""
    if mutated:
        verdict.fail("anticheat", f"{when}, the candidate modified its input(s) {', '.join(mutated)} "
                     "(inputs must stay unchanged)", key="mutated")
