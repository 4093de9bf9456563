"""rocm/multreduce_matmul_dot_kernel: skinny GEMM C = A @ B (+ bias per row) with tl.dot.

Difficulty 3: a tiled tl.dot GEMM tuned for decode shapes (M = 1..2 with K up
to 28672) as well as square ones, with an optional bias and a column-major B.

Compared with the original: loads must stay inside A and B (the original read
rows >= M and columns >= N out of bounds and only masked the store), the
timed bf16/fp16 shapes are checked too, the output is poisoned, and B is
scaled by 1/sqrt(K) so outputs are O(1) at every K (atol is a little looser
than the original's 1e-3 because the bias may be added before or after the
cast, and fp16 rounds at O(1)). The harness launches the wrapper kernel only;
its meta-parameters are chosen per shape (the original autotuned them with
AMD-only config keys). The original's 14 correctness and 24 perf cases are
reduced to 8 correctness and 6 timed cases.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import (
    cdiv,
    dtype_of,
    element_size,
    generator,
    launch,
    next_power_of_2,
    poisoned,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

PARAMS = (
    "a_ptr", "b_ptr", "c_ptr", "bias_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk",
    "stride_bn", "stride_cm", "stride_cn", "stride_bias", "BLOCK_SIZE_M", "BLOCK_SIZE_N",
    "BLOCK_SIZE_K", "USE_BIAS", "EVEN_K",
)

TASK = Task(
    suite="rocm",
    id="multreduce_matmul_dot_kernel",
    instruction=(
        "Write a Triton kernel `triton_dot_matmul_kernel` computing C = A @ B (+ bias[m] added to "
        "every element of row m when USE_BIAS) using tl.dot with float32 accumulation; the "
        "result is stored in C's dtype (A's dtype). A is (M, K), B is (K, N), C is (M, N), all "
        "addressed through the given strides (B is sometimes column-major: stride_bk = 1, "
        "stride_bn = K); bias is a contiguous (M,) vector read with stride_bias, or None "
        "(USE_BIAS False, stride_bias 0).\n"
        "Signature: triton_dot_matmul_kernel(" + ", ".join(PARAMS) + "); BLOCK_SIZE_M/N/K, "
        "USE_BIAS and EVEN_K are tl.constexpr. (The original defines a core kernel "
        "`triton_matmul_kernel` with the same parameters plus USE_DOT before EVEN_K and calls it "
        "from this wrapper with USE_DOT=True; that layout is allowed but not required.)\n"
        "Launch: 1-D grid of cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N) programs, one "
        "BLOCK_SIZE_M x BLOCK_SIZE_N tile each (program id -> (pid // cdiv(N, BLOCK_SIZE_N), "
        "pid % cdiv(N, BLOCK_SIZE_N)) in the original). The harness passes the block sizes "
        "(16/32/up to 256 for M <= 16, else 64/64/64), EVEN_K = (K % BLOCK_SIZE_K == 0), "
        "num_warps=4, num_stages=2, all by keyword. A kernel that autotunes the block sizes must "
        "also derive EVEN_K itself (e.g. @triton.heuristics). M can be 1, N and K need not be "
        "multiples of anything: mask the K tail, never read rows >= M or columns >= N outside "
        "the tensors, never store outside C.\n"
        "Dtypes: A, B, C and bias share one dtype (float16 or bfloat16)."
    ),
    entry_points=[
        EntryPoint(
            "triton_dot_matmul_kernel",
            params=PARAMS,
            constexpr=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "USE_BIAS", "EVEN_K"),
        )
    ],
    harness="",
    difficulty=3,
    category="MatrixMultiply",
    tolerances={"float16": [2e-3, 1e-2], "bfloat16": [1.6e-2, 1e-2]},
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note=(
        "(M, N, K): correctness float16 with column-major B: (1,8192,28672), (1,6144,6144), "
        "(1,4096,4096), (2,16384,16384), (1,4096,3078), (1,23,31), (1,23,128), bias on and off; "
        "timed with row-major B: (128,8192,4096), (512,4096,4096), (1024,1024,1024), "
        "(4096,512,2048), (1,4096,3078), (16,2048,2048) in float16 and bfloat16. "
        "A ~ N(0,1), B ~ N(0,1/K), bias ~ N(0,1)."
    ),
)

# (M, N, K, dtype, bias, column-major B, timed)
FULL = [
    (1, 8192, 28672, "float16", True, True, False),
    (1, 6144, 6144, "float16", False, True, False),
    (1, 4096, 4096, "float16", True, True, False),
    (2, 16384, 16384, "float16", False, True, False),
    (1, 4096, 3078, "float16", True, True, False),
    (1, 23, 31, "float16", False, True, False),
    (1, 23, 31, "float16", True, True, False),
    (1, 23, 128, "float16", True, True, False),
    (128, 8192, 4096, "float16", True, False, True),
    (512, 4096, 4096, "bfloat16", False, False, True),
    (1024, 1024, 1024, "float16", False, False, True),
    (4096, 512, 2048, "bfloat16", True, False, True),
    (1, 4096, 3078, "bfloat16", True, False, True),
    (16, 2048, 2048, "float16", False, False, True),
]
SMALL = [
    (1, 23, 31, "float16", False, True),
    (1, 23, 128, "float16", True, True),
    (3, 40, 100, "float16", True, False),
    (5, 48, 512, "float16", False, False),
]  # no bfloat16 here: the interpreter's tl.dot misreads bfloat16 operands


def blocks_for(m: int, k: int) -> tuple[int, int, int]:
    if m <= 16:
        return 16, 32, min(256, max(16, next_power_of_2(k)))
    return 64, 64, 64


def _case(m: int, n: int, k: int, dt: str, bias: bool, col_b: bool, timed: bool) -> Case:
    es = element_size(dt)
    return Case(
        name=f"m{m}_n{n}_k{k}_{dt}{'_bias' if bias else ''}{'_colB' if col_b else ''}",
        params={"M": m, "N": n, "K": k, "dtype": dt, "bias": bias, "col_b": col_b},
        flops=float(2 * m * n * k + (m * n if bias else 0)),
        bytes=float((m * k + k * n + m * n + (m if bias else 0)) * es),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(*spec, False) for spec in SMALL]
        return [_case(*spec) for spec in FULL]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        g = generator(seed)
        dtype = dtype_of(p["dtype"])
        m, n, k = p["M"], p["N"], p["K"]
        std = 1.0 / math.sqrt(k)
        a = randn((m, k), dtype, device, g)
        if p["col_b"]:
            b = randn((n, k), dtype, device, g, std=std).T
        else:
            b = randn((k, n), dtype, device, g, std=std)
        inputs: dict[str, Any] = {"a": a, "b": b}
        if p["bias"]:
            inputs["bias"] = randn((m,), dtype, device, g)
        return inputs

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a = inputs["a"]
        return {"c": poisoned((case.params["M"], case.params["N"]), a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        bias = inputs.get("bias")
        m, n, k = p["M"], p["N"], p["K"]
        bm, bn, bk = blocks_for(m, k)
        launch(
            module.triton_dot_matmul_kernel,
            lambda meta: (cdiv(m, meta["BLOCK_SIZE_M"]) * cdiv(n, meta["BLOCK_SIZE_N"]),),
            a_ptr=a,
            b_ptr=b,
            c_ptr=c,
            bias_ptr=bias,
            M=m,
            N=n,
            K=k,
            stride_am=a.stride(0),
            stride_ak=a.stride(1),
            stride_bk=b.stride(0),
            stride_bn=b.stride(1),
            stride_cm=c.stride(0),
            stride_cn=c.stride(1),
            stride_bias=bias.stride(0) if bias is not None else 0,
            BLOCK_SIZE_M=bm,
            BLOCK_SIZE_N=bn,
            BLOCK_SIZE_K=bk,
            USE_BIAS=bias is not None,
            EVEN_K=k % bk == 0,
            num_warps=4,
            num_stages=2,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        if "bias" in inputs:
            return {"c": torch.addmm(inputs["bias"][:, None], inputs["a"], inputs["b"])}
        return {"c": inputs["a"] @ inputs["b"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        c = inputs["a"].to(torch.float64) @ inputs["b"].to(torch.float64)
        if "bias" in inputs:
            c = c + inputs["bias"].to(torch.float64)[:, None]
        return {"c": c}
