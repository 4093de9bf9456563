"""Check: the timed calls computed what they were timed for.

Detection (child, ``timed_calls.TimedSide.block``): after every timed call of a
candidate, once its code has returned and before it runs again, trusted code
gathers its outputs at random positions of every tensor (``samples``), and on
calls picked at random (about ``verify_calls`` a case, and one more from a last
block of random length if none was picked) copies its whole outputs to the
host (``verified``). Neither choice exists before the call has ended, so a
candidate cannot do the work only on the calls that are looked at.

Interpretation (judge, here): both are compared with the reference's outputs
for the secret timing seed. On a checked case a difference rejects the
candidate; on a timing-only case (``Case.checked = False``) it costs the
verdict its speedup (``timed_outputs_differ``).
"""

from __future__ import annotations

from typing import Any

from geak_evaluator_triton.run_compare import compare_outputs


def _leaf(value: Any, path: str) -> Any:
    """The tensor at ``path`` (``timed_calls.tensor_leaves``'s spelling) in ``value``, or None."""
    import re

    node = value
    for key, index in re.findall(r"\.?([^.\[\]]+)|\[(\d+)\]", path):
        try:
            node = node[int(index)] if index else node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def sample_mismatch(expected: Any, samples: list[dict[str, Any]], overrides: dict[str, Any]) -> str:
    """The first call whose sampled outputs differ from ``expected`` at the same positions:
    a sentence, or "" when every sample matches."""
    import torch

    flats: dict[str, Any] = {}
    for number, call in enumerate(samples):
        for path, (positions, values) in call.items():
            if path not in flats:
                leaf = _leaf(expected, path)
                flats[path] = leaf.reshape(-1) if isinstance(leaf, torch.Tensor) else None
            flat = flats[path]
            if flat is None:
                return f"timed call {number + 1}: output {path or 'outputs'!r} is not one of the reference's tensors"
            if int(positions.max()) >= flat.numel() or values.dtype != flat.dtype:
                return (f"timed call {number + 1}: output {path or 'outputs'!r} has {flat.numel()} elements of "
                        f"{flat.dtype} in the reference, not what the call wrote")
            diffs = compare_outputs(flat[positions], values, overrides, None)
            if diffs:
                return (f"timed call {number + 1}, output {path or 'outputs'!r} at sampled positions: "
                        f"{diffs[0]['message']}")
    return ""


def verified_mismatch(expected: Any, verified: list[tuple[int, Any]], overrides: dict[str, Any],
                      custom: list[dict[str, Any] | None]) -> tuple[str, list[dict[str, Any]]]:
    """The first kept call whose whole outputs differ: (sentence, mismatches), or ("", [])."""
    for (number, outputs), verdicts in zip(verified, custom, strict=True):
        diffs = compare_outputs(expected, outputs, overrides, verdicts)
        if diffs:
            return f"timed call {number + 1}: {diffs[0]['message']}", diffs
    return "", []
