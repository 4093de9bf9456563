"""Inputs and harness glue shared by the tasks that work on a single tile: the value tiles
of test_triton_flip and test_triton_sort, and the fp16 A/B operands of the matmul tasks
(test_gemm_no_scf, test_tma_store_gemm, triton_multreduce_matmul_kernel)."""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness, dtype_of, generator, poisoned, rand, randint, randn
from geak_core.api.tasks import Case

from geak_suite_rocm.tasks._eager import matmul_to


class ValueTileHarness(Harness):
    """An N x M tile ``x`` in, a tile ``z`` of its shape and dtype out (params ``N``, ``M``,
    ``dtype``): ``x`` holds values in [0, 100), uniform for a floating dtype, integers
    otherwise."""

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        shape = (case.params["N"], case.params["M"])
        dtype = dtype_of(case.params["dtype"])
        if dtype.is_floating_point:
            x = rand(shape, dtype, device, g, 0.0, 100.0)
        else:
            x = randint(shape, 0, 100, dtype, device, g)
        return {"x": x}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        x = inputs["x"]
        return {"z": poisoned(x.shape, x.dtype, x.device)}

    def tile_args(self, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """The kernel arguments every value-tile task passes: ``X``, ``Z``, ``N``, ``M``."""
        return {"X": inputs["x"], "Z": outputs["z"], "N": case.params["N"], "M": case.params["M"]}


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


class OneTileMatmulHarness(Harness):
    """C = A @ B in one program whose block sizes are the problem size (params ``M``,
    ``N``, ``K``, ``b_col_major``): fp16 operands, C fp16 when the case parameter named by
    ``F16_OUTPUT`` is set, else fp32."""

    F16_OUTPUT = ""

    def _c_dtype(self, case: Case) -> Any:
        import torch

        return torch.float16 if case.params[self.F16_OUTPUT] else torch.float32

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        return fp16_operands(case, device, generator(seed))

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a, b = inputs["a"], inputs["b"]
        return {"c": poisoned((a.shape[0], b.shape[1]), self._c_dtype(case), a.device)}

    def tile_args(self, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """Pointers, sizes, strides and the block sizes (the sizes themselves)."""
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        p = case.params
        return dict(
            a_ptr=a, b_ptr=b, c_ptr=c, M=p["M"], N=p["N"], K=p["K"],
            stride_am=a.stride(0), stride_ak=a.stride(1),
            stride_bk=b.stride(0), stride_bn=b.stride(1),
            stride_cm=c.stride(0), stride_cn=c.stride(1),
            BLOCK_M=p["M"], BLOCK_N=p["N"], BLOCK_K=p["K"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"c": matmul_to(inputs["a"], inputs["b"], self._c_dtype(case))}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        c = inputs["a"].double() @ inputs["b"].double()
        return {"c": c.to(self._c_dtype(case))}
