"""rocm/test_cast_matmul: mixed-input GEMM, C = cast(A) @ cast(B) with a chosen accumulator type.

Difficulty 3: a tiled, group-swizzled GEMM whose operands arrive in two
different float types (fp16/fp32/fp64) and are cast to the output type in the
kernel, with the accumulator type (fp16 or fp32) chosen by a tl.dtype
constexpr.

Compared with the original: the timed combinations are checked too, the
output is poisoned, and the kernel part's `input_dtypes` / `out_dtypes` lists
are no longer needed (the harness owns the parametrisation). The original's
data (N(0,1) values) and tolerance (atol 0.3, rtol 0.01, calibrated for fp16
accumulation over K = 768) are kept. The tile configuration is the original's
16 x 16 x 32 with GROUP_M 8 (a candidate may tune it).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, dtype_of, element_size, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._eager import matmul_to

BLOCKS = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 8}

TASK = Task(
    suite="rocm",
    id="test_cast_matmul",
    instruction=(
        "Write a Triton kernel `matmul_kernel` computing C = cast(A) @ cast(B): A (M, K) and B "
        "(K, N) have different float dtypes (two of float16, float32, float64); both are cast to "
        "C's dtype (float16 or float32) inside the kernel before tl.dot, which accumulates in "
        "`dot_out_dtype` (tl.float16 or tl.float32); the result is cast to C's dtype.\n"
        "Signature: matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, "
        "stride_cm, stride_cn, dot_out_dtype, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M); dot_out_dtype "
        "(a tl.dtype), BLOCK_M/N/K and GROUP_M are tl.constexpr. All tensors are addressed "
        "through the given strides (row-major here).\n"
        "Launch: 1-D grid of cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs (passed as a 2-D "
        "grid (that, 1)); one BLOCK_M x BLOCK_N tile per program, tiles ordered in groups of "
        "GROUP_M rows (group swizzle). The harness passes BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, "
        "GROUP_M=8 and dot_out_dtype, all by keyword; the blocks may be autotuned. M, N and K "
        "are not always multiples of the blocks: mask the K tail, and never store outside C.\n"
        "The accumulator type is part of the problem: with dot_out_dtype = tl.float16 the sums "
        "are fp16. fp32 dots may use tl.dot's default precision (TF32 on NVIDIA)."
    ),
    entry_points=[
        EntryPoint(
            "matmul_kernel",
            params=(
                "A", "B", "C", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                "stride_cm", "stride_cn", "dot_out_dtype", "BLOCK_M", "BLOCK_N", "BLOCK_K",
                "GROUP_M",
            ),
            constexpr=("dot_out_dtype", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"),
        )
    ],
    harness="",
    difficulty=3,
    category="MatrixMultiply",
    tolerances={"float16": [0.3, 1e-2], "float32": [0.3, 1e-2]},
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note=(
        "(M, K, N): correctness (1280, 768, 1024) for every ordered pair of distinct input "
        "dtypes among float16/float32/float64, C float16 or float32, accumulator = C's dtype; "
        "timed (128,128,128), (1024,768,1280), (1280,1024,768) with (A, B, C, acc) = "
        "(f32, f16, f16, f32) and (f16, f32, f16, f32). A, B ~ N(0,1)."
    ),
)

INPUTS = ("float16", "float32", "float64")
OUTPUTS = ("float16", "float32")
TIMED = [(128, 128, 128), (1024, 768, 1280), (1280, 1024, 768)]
TIMED_COMBOS = [("float32", "float16", "float16", "float32"), ("float16", "float32", "float16", "float32")]
# (M, K, N, a dtype, b dtype, c dtype, accumulator dtype)
SMALL = [
    (40, 48, 24, "float16", "float32", "float32", "float32"),
    (40, 48, 24, "float32", "float64", "float16", "float16"),
    (33, 64, 50, "float64", "float16", "float32", "float32"),
    (16, 96, 32, "float32", "float16", "float16", "float32"),
]


def _case(m: int, k: int, n: int, a: str, b: str, c: str, acc: str, timed: bool) -> Case:
    return Case(
        name=f"m{m}_k{k}_n{n}_{a}x{b}_to_{c}_acc_{acc}",
        params={"M": m, "K": k, "N": n, "a_dtype": a, "b_dtype": b, "c_dtype": c, "acc_dtype": acc},
        flops=float(2 * m * n * k),
        bytes=float(
            m * k * element_size(a) + k * n * element_size(b) + m * n * element_size(c)
        ),
        dtype=c,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(*spec, False) for spec in SMALL]
        cases = [
            _case(1280, 768, 1024, a, b, c, c, False)
            for a in INPUTS
            for b in INPUTS
            if a != b
            for c in OUTPUTS
        ]
        cases += [_case(m, k, n, *combo, True) for m, k, n in TIMED for combo in TIMED_COMBOS]
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        g = generator(seed)
        return {
            "a": randn((p["M"], p["K"]), dtype_of(p["a_dtype"]), device, g),
            "b": randn((p["K"], p["N"]), dtype_of(p["b_dtype"]), device, g),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        p = case.params
        return {"c": poisoned((p["M"], p["N"]), dtype_of(p["c_dtype"]), inputs["a"].device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        import triton.language as tl

        p = case.params
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        m, n = p["M"], p["N"]
        launch(
            module.matmul_kernel,
            lambda meta: (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), 1),
            A=a,
            B=b,
            C=c,
            M=m,
            N=n,
            K=p["K"],
            stride_am=a.stride(0),
            stride_ak=a.stride(1),
            stride_bk=b.stride(0),
            stride_bn=b.stride(1),
            stride_cm=c.stride(0),
            stride_cn=c.stride(1),
            dot_out_dtype=getattr(tl, p["acc_dtype"]),
            **BLOCKS,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"c": matmul_to(inputs["a"], inputs["b"], dtype_of(case.params["c_dtype"]))}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        c_dtype = dtype_of(case.params["c_dtype"])
        a = inputs["a"].to(c_dtype).to(torch.float64)
        b = inputs["b"].to(c_dtype).to(torch.float64)
        return {"c": a @ b}
