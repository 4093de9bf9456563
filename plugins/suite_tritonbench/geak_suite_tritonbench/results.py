"""What a TritonBench test returns, made comparable, and whether it checks anything.

A test returns a dict of tensors most of the time, but also lists, tuples,
nested dicts, scalars, ``torch.Size`` objects or booleans. ``comparable``
turns that into the structures the judge compares (tensors, lists, tuples,
dicts with string keys, numbers, strings, None). ``weak_result_reason`` says
when the result holds nothing that a wrong kernel would change: None, an
empty structure, only booleans (``torch.allclose(...)`` answers), only shapes
or integers. The judge still compares such results, and flags the verdict.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

MAX_DEPTH = 64


def comparable(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` made only of what the judge's structural comparison knows."""
    import numpy as np
    import torch

    if _depth > MAX_DEPTH:
        raise ValueError(f"the test's result nests deeper than {MAX_DEPTH} levels")
    deeper = _depth + 1
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, torch.Size):
        return tuple(int(v) for v in value)
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else repr(k)): comparable(v, deeper) for k, v in value.items()
        }
    if isinstance(value, list):
        return [comparable(v, deeper) for v in value]
    if isinstance(value, tuple):
        return tuple(comparable(v, deeper) for v in value)
    if isinstance(value, (set, frozenset)):
        return sorted((comparable(v, deeper) for v in value), key=repr)
    return f"<{type(value).__qualname__} object>"


def _census(value: Any, counts: Counter[str], depth: int = 0) -> None:
    import numpy as np
    import torch

    if depth > MAX_DEPTH:
        return
    if isinstance(value, (torch.Tensor, np.ndarray)):
        numel = value.numel() if isinstance(value, torch.Tensor) else value.size
        is_bool = value.dtype in (torch.bool, np.bool_)
        if numel == 0:
            counts["empty tensor"] += 1
        elif is_bool and numel == 1:
            counts["boolean"] += 1
        else:
            counts["values"] += 1
    elif isinstance(value, (bool, np.bool_)):
        counts["boolean"] += 1
    elif isinstance(value, torch.Size):
        counts["shape"] += 1
    elif isinstance(value, (float, complex, np.floating, np.complexfloating)):
        counts["values"] += 1
    elif isinstance(value, (int, np.integer)):
        counts["integer"] += 1
    elif isinstance(value, str):
        counts["string"] += 1
    elif value is None:
        counts["None"] += 1
    elif isinstance(value, dict):
        for v in value.values():
            _census(v, counts, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _census(v, counts, depth + 1)
    else:
        counts["other object"] += 1


def weak_result_reason(result: Any) -> str | None:
    """Why ``result`` cannot tell a right kernel from a wrong one, or None when it can."""
    if result is None:
        return "the test returns None: nothing to compare"
    counts: Counter[str] = Counter()
    _census(result, counts)
    if counts["values"]:
        return None
    if not counts:
        return "the test returns an empty structure: nothing to compare"
    found = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in sorted(counts.items()))
    return f"the test's result holds no tensor or floating-point values, only {found}"
