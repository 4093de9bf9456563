"""Inputs shared by the single-tile fp16 matmul tasks (test_gemm_no_scf, test_tma_store_gemm)."""

from __future__ import annotations

from typing import Any

from geak_core.harness import generator, randn
from geak_core.tasks import Case


def fp16_operands(case: Case, seed: int, device: str) -> dict[str, Any]:
    """``a`` (M, K) row-major and ``b`` (K, N), column-major when ``b_col_major`` (a
    transposed view of an (N, K) tensor), both standard-normal fp16."""
    import torch

    g = generator(seed)
    m, n, k = case.params["M"], case.params["N"], case.params["K"]
    a = randn((m, k), torch.float16, device, g)
    if case.params["b_col_major"]:
        b = randn((n, k), torch.float16, device, g).t()
    else:
        b = randn((k, n), torch.float16, device, g)
    return {"a": a, "b": b}
