"""rocm/test_tma_store_gemm: C = A @ B for a single fp16 tile, stored through a block pointer.

Difficulty 2: one tl.dot on block-pointer tiles whose size is the problem size.
Fixes: the original checked the eight column-major-B shapes only and timed three row-major-B
shapes it never checked; every timed shape is checked here (and the capability gate the
original applied to timing only is dropped: nothing here needs cc >= 9).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import launch
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Requirement, Task

from geak_suite_rocm.tasks._tiles import OneTileMatmulHarness

TASK = Task(
    suite="rocm",
    id="test_tma_store_gemm",
    instruction=(
        "Write a Triton kernel `matmul_tma_load_store(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, "
        "stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr, "
        "BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, OUTPUT_F16: tl.constexpr)` computing "
        "C = A @ B with fp32 accumulation. A is M x K fp16 (row-major), B is K x N fp16 given "
        "by its strides (column-major in most cases, i.e. stride_bk = 1, stride_bn = K; "
        "row-major in some), C is M x N, fp16 when OUTPUT_F16 else fp32, row-major. "
        "BLOCK_M = M, BLOCK_N = N, BLOCK_K = K exactly (powers of two): one program computes "
        "the whole product in one tile, so no masking is needed. The original loads A and B "
        "and stores C through block pointers (tl.make_block_ptr); any correct access is "
        "accepted. The harness launches grid (1, 1) with num_warps=4, all arguments by keyword."
    ),
    entry_points=[
        EntryPoint(
            "matmul_tma_load_store",
            params=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
                    "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M", "BLOCK_N",
                    "BLOCK_K", "OUTPUT_F16"),
            constexpr=("BLOCK_M", "BLOCK_N", "BLOCK_K", "OUTPUT_F16"),
        )
    ],
    harness="",
    difficulty=2,
    category="MatrixMultiply",
    tolerances={"float16": [1e-3, 1e-2], "float32": [1e-3, 1e-2]},
    requires=[Requirement("block_ptr", "the reference works through tl.make_block_ptr")],
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note=(
        "(M, N, K) = (64, 64, 16), (128, 64, 32), (64, 128, 32), (128, 128, 64) with "
        "column-major B, fp16 and fp32 output; (64, 64, 128) row-major B, both outputs; "
        "(32, 32, 256) row-major B, fp16 output. A row-major fp16."
    ),
)


def _case(m: int, n: int, k: int, b_col_major: bool, f16_out: bool) -> Case:
    out_bytes = 2 if f16_out else 4
    layout = "bcol" if b_col_major else "brow"
    return Case(
        name=f"{m}x{n}x{k}_{layout}_{'f16' if f16_out else 'f32'}out",
        params={"M": m, "N": n, "K": k, "b_col_major": b_col_major, "OUTPUT_F16": f16_out,
                "num_warps": 4},
        flops=float(2 * m * n * k),
        bytes=float((m * k + k * n) * 2 + m * n * out_bytes),
        dtype="float16",
    )


class Harness(OneTileMatmulHarness):
    F16_OUTPUT = "OUTPUT_F16"

    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(64, 64, 16, True, False), _case(64, 128, 32, True, True),
                    _case(32, 32, 64, False, True)]
        shapes = ((64, 64, 16), (128, 64, 32), (64, 128, 32), (128, 128, 64))
        cases = [_case(m, n, k, True, f16) for m, n, k in shapes for f16 in (False, True)]
        cases += [_case(64, 64, 128, False, f16) for f16 in (False, True)]
        cases.append(_case(32, 32, 256, False, True))
        return cases

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        launch(
            module.matmul_tma_load_store,
            (1, 1),
            **self.tile_args(case, inputs, outputs),
            OUTPUT_F16=p["OUTPUT_F16"],
            num_warps=p["num_warps"],
        )
