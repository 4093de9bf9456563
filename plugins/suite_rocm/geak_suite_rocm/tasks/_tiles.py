"""fp16 A/B operands shared by matmul tasks (test_gemm_no_scf, test_tma_store_gemm,
triton_multreduce_matmul_kernel)."""

from __future__ import annotations

from typing import Any

from geak_core.harness import randn
from geak_core.tasks import Case


def fp16_operands(case: Case, device: str, g: Any) -> dict[str, Any]:
    """``a`` (M, K) row-major and ``b`` (K, N), column-major when ``b_col_major`` (a
    transposed view of an (N, K) tensor), both standard-normal fp16 drawn from ``g``."""
    import torch

    m, n, k = case.params["M"], case.params["N"], case.params["K"]
    a = randn((m, k), torch.float16, device, g)
    if case.params["b_col_major"]:
        b = randn((n, k), torch.float16, device, g).t()
    else:
        b = randn((k, n), torch.float16, device, g)
    return {"a": a, "b": b}
