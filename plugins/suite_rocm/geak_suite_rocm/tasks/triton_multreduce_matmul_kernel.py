"""rocm/triton_multreduce_matmul_kernel: skinny C = A @ B (+ bias per row) without tl.dot.

The product is formed by broadcast multiply and a sum over K (decode-sized M of 1 or 2, and
small-block tiles), through two entry points: the core `triton_matmul_kernel` (with a USE_DOT
switch) and the wrapper `triton_multreduce_matmul_kernel` that calls it with USE_DOT=False.
Difficulty 3: memory-bound GEMV-like shapes up to 8192 x 28672, plus register-hungry 3-D
broadcast products for the square shapes.
Fixes: the original read rows >= M and columns >= N out of bounds (only the store was
masked); the contract here requires masked reads. The original wrapper was autotuned with
AMD-only config keys; here the harness passes explicit blocks (launch() drops them for a
candidate that autotunes). The 66 timed core configurations are cut to 4, and the 14
correctness cases to 7 (each shape once, bias alternating).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._tiles import fp16_operands

PARAMS = ("a_ptr", "b_ptr", "c_ptr", "bias_ptr", "M", "N", "K", "stride_am", "stride_ak",
          "stride_bk", "stride_bn", "stride_cm", "stride_cn", "stride_bias", "BLOCK_SIZE_M",
          "BLOCK_SIZE_N", "BLOCK_SIZE_K", "USE_BIAS")

TASK = Task(
    suite="rocm",
    id="triton_multreduce_matmul_kernel",
    instruction=(
        "Write two Triton kernels computing C = A @ B (+ bias[m] added to row m when USE_BIAS) "
        "with fp32 accumulation. Core: `triton_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, "
        "M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, "
        "stride_bias, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, "
        "BLOCK_SIZE_K: tl.constexpr, USE_BIAS: tl.constexpr, USE_DOT: tl.constexpr, "
        "EVEN_K: tl.constexpr)`; USE_DOT=False (the only value the harness passes) means the "
        "product is formed by broadcast multiply and a sum over K rather than tl.dot. "
        "Wrapper: `triton_multreduce_matmul_kernel(...)` with the same parameters minus "
        "USE_DOT, which computes the same thing as the core with USE_DOT=False. A is M x K "
        "fp16 row-major; B is K x N fp16 given by its strides (column-major, stride_bk = 1, in "
        "the wrapper cases; row-major in the core cases); C is M x N fp16 row-major; bias has "
        "M fp16 elements with stride stride_bias (bias_ptr is None and stride_bias 0 without "
        "bias). EVEN_K = (K % BLOCK_SIZE_K == 0); M, N and K are arbitrary: mask reads and "
        "writes outside the matrices. Both launches use a 1-D grid of cdiv(M, BLOCK_SIZE_M) * "
        "cdiv(N, BLOCK_SIZE_N) programs, one BLOCK_SIZE_M x BLOCK_SIZE_N tile of C each, all "
        "arguments by keyword. Wrapper cases (decode shapes, M <= 2): BLOCK_SIZE_M=1, "
        "BLOCK_SIZE_N=64, BLOCK_SIZE_K=256, num_warps=8, num_stages=2. Core cases: blocks as "
        "listed in the shapes, USE_DOT=False, num_warps=4, num_stages=1 (no bias in the timed "
        "ones)."
    ),
    entry_points=[
        EntryPoint(
            "triton_matmul_kernel",
            params=(*PARAMS, "USE_DOT", "EVEN_K"),
            constexpr=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "USE_BIAS", "USE_DOT",
                       "EVEN_K"),
        ),
        EntryPoint(
            "triton_multreduce_matmul_kernel",
            params=(*PARAMS, "EVEN_K"),
            constexpr=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "USE_BIAS", "EVEN_K"),
        ),
    ],
    harness="",
    difficulty=3,
    category="MatrixMultiply",
    tolerances={"float16": [1e-3, 1e-2]},
    outliers=OutlierSpec(inputs=("a", "b", "bias")),
    shapes_note=(
        "Wrapper (column-major B): (M, N, K) = (1, 8192, 28672) bias, (1, 6144, 6144), "
        "(1, 4096, 4096) bias, (2, 16384, 16384), (1, 4096, 3078) bias, (1, 23, 31), "
        "(1, 23, 128) bias. Core (row-major B, no bias), (M, N, K, BM, BN, BK): "
        "(512, 512, 512, 1, 64, 128), (1024, 1024, 512, 16, 64, 32), "
        "(2048, 1024, 256, 32, 32, 32), (1024, 1024, 512, 1, 64, 256). All fp16."
    ),
)

WRAPPER_BLOCKS = (1, 64, 256)


def _case(m: int, n: int, k: int, bias: bool, entry: str, blocks: tuple[int, int, int],
          timed: bool) -> Case:
    bm, bn, bk = blocks
    return Case(
        name=f"{entry}_{m}x{n}x{k}_b{bm}x{bn}x{bk}{'_bias' if bias else ''}",
        params={"M": m, "N": n, "K": k, "bias": bias, "entry": entry, "b_col_major":
                entry == "wrapper", "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
                "BLOCK_SIZE_K": bk, "num_warps": 8 if entry == "wrapper" else 4,
                "num_stages": 2 if entry == "wrapper" else 1},
        flops=float(2 * m * n * k + (m * n if bias else 0)),
        bytes=float((m * k + k * n + m * n + (m if bias else 0)) * 2),
        dtype="float16",
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [
                _case(1, 23, 31, True, "wrapper", WRAPPER_BLOCKS, False),
                _case(2, 80, 300, False, "wrapper", (1, 64, 128), False),
                _case(32, 32, 64, False, "core", (16, 32, 32), False),
                _case(20, 40, 48, True, "core", (16, 16, 32), False),
            ]
        wrapper = [
            ((1, 8192, 28672), True, True), ((1, 6144, 6144), False, True),
            ((1, 4096, 4096), True, True), ((2, 16384, 16384), False, True),
            ((1, 4096, 3078), True, True), ((1, 23, 31), False, False),
            ((1, 23, 128), True, False),
        ]
        core = [
            ((512, 512, 512), (1, 64, 128)), ((1024, 1024, 512), (16, 64, 32)),
            ((2048, 1024, 256), (32, 32, 32)), ((1024, 1024, 512), (1, 64, 256)),
        ]
        return [
            *(_case(*s, bias, "wrapper", WRAPPER_BLOCKS, timed) for s, bias, timed in wrapper),
            *(_case(*s, False, "core", blocks, True) for s, blocks in core),
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        g = generator(seed)
        inputs = fp16_operands(case, device, g)
        if case.params["bias"]:
            inputs["bias"] = randn((case.params["M"],), torch.float16, device, g)
        return inputs

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a, b = inputs["a"], inputs["b"]
        return {"c": poisoned((a.shape[0], b.shape[1]), a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        bias = inputs.get("bias")
        p = case.params
        m, n, k = p["M"], p["N"], p["K"]
        args = dict(
            a_ptr=a, b_ptr=b, c_ptr=c, bias_ptr=bias, M=m, N=n, K=k,
            stride_am=a.stride(0), stride_ak=a.stride(1),
            stride_bk=b.stride(0), stride_bn=b.stride(1),
            stride_cm=c.stride(0), stride_cn=c.stride(1),
            stride_bias=bias.stride(0) if bias is not None else 0,
            BLOCK_SIZE_M=p["BLOCK_SIZE_M"], BLOCK_SIZE_N=p["BLOCK_SIZE_N"],
            BLOCK_SIZE_K=p["BLOCK_SIZE_K"], USE_BIAS=bias is not None,
            EVEN_K=k % p["BLOCK_SIZE_K"] == 0,
            num_warps=p["num_warps"], num_stages=p["num_stages"],
        )

        def grid(meta: dict[str, Any]) -> tuple[int]:
            return (cdiv(m, meta["BLOCK_SIZE_M"]) * cdiv(n, meta["BLOCK_SIZE_N"]),)

        if p["entry"] == "wrapper":
            launch(module.triton_multreduce_matmul_kernel, grid, **args)
        else:
            launch(module.triton_matmul_kernel, grid, USE_DOT=False, **args)

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        if "bias" in inputs:
            return {"c": torch.addmm(inputs["bias"][:, None], inputs["a"], inputs["b"])}
        return {"c": inputs["a"] @ inputs["b"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        c = inputs["a"].double() @ inputs["b"].double()
        if "bias" in inputs:
            c = c + inputs["bias"].double()[:, None]
        return {"c": c.to(torch.float16)}
