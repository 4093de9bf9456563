"""Launch heuristics shared by the row-wise tasks (softmax, layernorm, rmsnorm fwd/bwd).

One program handles a row (or, for rmsnorm, a strided set of rows) in tiles of
``block_size`` columns: the whole row when it fits in 64 KiB, else the row is walked in
blocks of that size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from geak_core.api.harness import element_size, next_power_of_2
from geak_core.api.tasks import Case

TIMED_DTYPES = ("float16", "bfloat16", "float32")


def block_size(n_cols: int, dtype: str) -> int:
    return min(65536 // element_size(dtype), next_power_of_2(n_cols))


def num_warps_for(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def sm_count(device: str) -> int:
    """Programs of the persistent grid: SMs/CUs on a GPU, 4 under the CPU interpreter."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.device(device)).multi_processor_count
    return 4


def persistent_row_args(case: Case, x: Any) -> dict[str, Any]:
    """Launch arguments of the persistent rmsnorm kernels for the (n_rows, n_cols) input
    ``x``: the sizes, ``ZERO_CENTERED_GAMMA``, ``BLOCK_SIZE`` (the case's override, else
    ``block_size`` of the input dtype), ``USE_BLOCKED`` and ``NUM_PRGMS`` = min(n_rows,
    ``sm_count``), which is also the grid."""
    n_rows, n_cols = x.shape
    block = case.params.get("BLOCK_SIZE") or block_size(n_cols, case.params["in_dtype"])
    return {
        "n_rows": n_rows,
        "n_cols": n_cols,
        "ZERO_CENTERED_GAMMA": case.params["zcg"],
        "BLOCK_SIZE": block,
        "USE_BLOCKED": n_cols > block,
        "NUM_PRGMS": min(n_rows, sm_count(str(x.device))),
    }


def row_cases(
    mode: str,
    small: Iterable[tuple],
    correctness: Iterable[tuple[int, int, int]],
    timed: Iterable[tuple[int, int]],
    make: Callable[..., Case],
) -> list[Case]:
    """Small mode: ``make(m, n, pad, dtype, False, block)`` per ``small`` row; full mode:
    fp32 correctness cases ``(m, n, pad)``, then every timed ``(m, n)`` in each of
    ``TIMED_DTYPES``."""
    if mode == "small":
        return [make(m, n, pad, dt, False, block) for m, n, pad, dt, block in small]
    cases = [make(m, n, pad, "float32", False) for m, n, pad in correctness]
    cases += [make(m, n, 0, dt, True) for m, n in timed for dt in TIMED_DTYPES]
    return cases
