"""What the PyTorch eager equivalents of several tasks share (``Harness.eager``)."""

from __future__ import annotations

from typing import Any


def matmul_to(a: Any, b: Any, dtype: Any) -> Any:
    """``a @ b`` with an output of ``dtype``, as PyTorch eager computes it: in the operands'
    own dtype when that is ``dtype``, else with both operands converted to ``dtype`` first
    (torch's matmul returns its operands' dtype)."""
    if a.dtype == dtype and b.dtype == dtype:
        return a @ b
    return a.to(dtype) @ b.to(dtype)
