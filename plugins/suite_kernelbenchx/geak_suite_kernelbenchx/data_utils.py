"""Our stand-in for the input helpers KernelBench-X's tests import (``from data_utils import``).

A test part of the benchmark draws its random inputs with three helpers of
the benchmark's ``utils/data_utils.py``; the harness puts a module built by
``module_for(device)`` into ``sys.modules["data_utils"]`` while it executes a
test part, so the tests run without the benchmark's folder on the import
path, and under the CPU interpreter on the CPU. The helpers draw from torch's
global generator exactly as the benchmark's do (same calls, same order), so
a seeded test sees the inputs it sees in the benchmark:

* ``rand_tensor(shape, *, dtype, device, mode, outlier_prob, outlier_scale, low, high)``:
  ``mode="standard"``: ``torch.randn``; ``"uniform"``: ``torch.rand`` scaled to
  ``[low, high)``; ``"outlier"``: ``torch.randn``, then the elements where a
  ``torch.rand`` draw falls below ``outlier_prob`` (default 0.001) replaced by
  normal draws times ``outlier_scale`` (default 50);
* ``rand_int(shape, *, low, high, device, dtype=int64)``: ``torch.randint``;
* ``rand_bool(shape, *, device)``: ``torch.randint(0, 2)`` as booleans.

The ``device`` default is the judge's device (``cuda`` on a GPU, ``cpu``
under the interpreter) instead of the benchmark's fixed ``"cuda"``.
"""

from __future__ import annotations

import types
from typing import Any

MODULE_NAME = "data_utils"
OUTLIER_PROB = 0.001
OUTLIER_SCALE = 50.0


def module_for(device: str) -> types.ModuleType:
    """A fresh ``data_utils`` module whose helpers default to ``device``."""
    import torch

    def rand_tensor(shape: Any, *, dtype: Any = torch.float32, device: Any = device,
                    mode: str = "standard", outlier_prob: float = OUTLIER_PROB,
                    outlier_scale: float = OUTLIER_SCALE, low: float = -1.0,
                    high: float = 1.0) -> Any:
        if mode == "standard":
            return torch.randn(*shape, device=device, dtype=dtype)
        if mode == "uniform":
            return (high - low) * torch.rand(*shape, device=device, dtype=dtype) + low
        if mode == "outlier":
            values = torch.randn(*shape, device=device, dtype=dtype)
            chosen = torch.rand(*shape, device=device) < outlier_prob
            count = int(chosen.sum().item())
            if count > 0:
                values = values.clone()
                values[chosen] = torch.randn(count, device=device, dtype=dtype) * outlier_scale
            return values
        return None  # as the benchmark's helper: an unknown mode gives None

    def rand_int(shape: Any, *, low: int, high: int, device: Any = device,
                 dtype: Any = torch.int64) -> Any:
        return torch.randint(low, high, shape, device=device, dtype=dtype)

    def rand_bool(shape: Any, *, device: Any = device) -> Any:
        return torch.randint(0, 2, shape, device=device, dtype=torch.bool)

    module = types.ModuleType(MODULE_NAME, "KernelBench-X input helpers (geak-core stand-in)")
    module.rand_tensor = rand_tensor  # type: ignore[attr-defined]
    module.rand_int = rand_int  # type: ignore[attr-defined]
    module.rand_bool = rand_bool  # type: ignore[attr-defined]
    return module
