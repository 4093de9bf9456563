"""rocm/test_iv_dependent_matmul: tiled C = A @ B whose result is rounded to fp16.

The original is a compiler test: five `type` values select how the A/B pointers are advanced
from the loop induction variable (before or after the loads, mixed, or computed two or three
iterations ahead); all five give the same product.
Difficulty 2: a standard tiled GEMM with fp32 accumulation.
Fixes: the original checked only fp32 256^3 with 32^3 blocks; the timed fp16 and larger-block
configurations are checked too. The 1300 timed configurations are cut to a representative 6
(both dtypes, five shapes, several block sizes, stages and warps, every type), plus the 5
original checks. C has the inputs' dtype and is counted at that width in the byte figure.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, dtype_of, element_size, generator, launch, poisoned, rand
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

TYPES = ("pre_load", "post_load", "post_pre_mixed", "post_load_two_iters", "post_load_three_iters")

TASK = Task(
    suite="rocm",
    id="test_iv_dependent_matmul",
    instruction=(
        "Write a Triton kernel `iv_dependent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, "
        "stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, "
        "BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, type: tl.constexpr)` "
        "computing C = A @ B with fp32 accumulation, rounding the result to fp16 before "
        "storing it into C. A (M x K) and B (K x N) are row-major, both float32 or both "
        "float16; C is M x N row-major with the inputs' dtype (so a float32 C holds "
        "fp16-rounded values). `type` is one of " + ", ".join(repr(t) for t in TYPES) + ": "
        "in the original it only selects how the loop advances the A/B pointers, so every "
        "value must give the same C. M, N, K are multiples of the block sizes. The harness "
        "launches a 1-D grid of cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N) programs, one "
        "BLOCK_SIZE_M x BLOCK_SIZE_N tile of C each, passing every argument by keyword plus "
        "num_warps and num_stages. float32 products may use TF32 within the tolerance."
    ),
    entry_points=[
        EntryPoint(
            "iv_dependent_matmul",
            params=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
                    "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_SIZE_M",
                    "BLOCK_SIZE_N", "BLOCK_SIZE_K", "type"),
            constexpr=("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "type"),
        )
    ],
    harness="",
    difficulty=2,
    category="MatrixMultiply",
    tolerances={"float32": [1e-2, 1e-2], "float16": [1e-2, 1e-2]},
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note=(
        "Checks: M = N = K = 256, float32, blocks 32/32/32, each of the five types. Timed: "
        "(512, 512, 128), (1024, 1024, 64), (2048, 512, 128), (512, 2048, 64) in float16 and "
        "float32 with blocks from 64x64x32 to 128x128x32. Inputs uniform in [0, 1)."
    ),
)


def _case(m: int, n: int, k: int, dt: str, blocks: tuple[int, int, int], kind: str,
          num_stages: int, num_warps: int, timed: bool) -> Case:
    bm, bn, bk = blocks
    es = element_size(dt)
    return Case(
        name=f"{m}x{n}x{k}_{dt}_b{bm}x{bn}x{bk}_{kind}_s{num_stages}w{num_warps}",
        params={"M": m, "N": n, "K": k, "dtype": dt, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
                "BLOCK_SIZE_K": bk, "type": kind, "num_stages": num_stages,
                "num_warps": num_warps},
        flops=float(2 * m * n * k),
        bytes=float((m * k + k * n + m * n) * es),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [
                _case(64, 64, 64, "float32", (32, 32, 32), "pre_load", 3, 4, False),
                _case(32, 64, 64, "float16", (16, 32, 16), "post_load_three_iters", 4, 4, False),
            ]
        checks = [
            _case(256, 256, 256, "float32", (32, 32, 32), t,
                  4 if t == "post_load_three_iters" else 3, 4, False)
            for t in TYPES
        ]
        timed = [
            _case(512, 512, 128, "float16", (64, 64, 32), "pre_load", 3, 4, True),
            _case(1024, 1024, 64, "float16", (128, 128, 32), "post_load", 3, 8, True),
            _case(2048, 512, 128, "float32", (64, 64, 32), "post_pre_mixed", 3, 4, True),
            _case(512, 2048, 64, "float16", (64, 128, 64), "post_load_two_iters", 3, 4, True),
            _case(1024, 1024, 64, "float32", (64, 64, 32), "post_load_three_iters", 4, 4, True),
            _case(2048, 512, 128, "float16", (128, 64, 64), "pre_load", 2, 8, True),
        ]
        return checks + timed

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        p = case.params
        dtype = dtype_of(p["dtype"])
        return {"a": rand((p["M"], p["K"]), dtype, device, g),
                "b": rand((p["K"], p["N"]), dtype, device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a, b = inputs["a"], inputs["b"]
        return {"c": poisoned((a.shape[0], b.shape[1]), a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        p = case.params
        m, n = p["M"], p["N"]
        launch(
            module.iv_dependent_matmul,
            lambda meta: (cdiv(m, meta["BLOCK_SIZE_M"]) * cdiv(n, meta["BLOCK_SIZE_N"]),),
            a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=p["K"],
            stride_am=a.stride(0), stride_ak=a.stride(1),
            stride_bk=b.stride(0), stride_bn=b.stride(1),
            stride_cm=c.stride(0), stride_cn=c.stride(1),
            BLOCK_SIZE_M=p["BLOCK_SIZE_M"], BLOCK_SIZE_N=p["BLOCK_SIZE_N"],
            BLOCK_SIZE_K=p["BLOCK_SIZE_K"], type=p["type"],
            num_stages=p["num_stages"], num_warps=p["num_warps"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"c": inputs["a"] @ inputs["b"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        c = (inputs["a"].double() @ inputs["b"].double()).to(torch.float16)
        return {"c": c.to(inputs["a"].dtype)}
