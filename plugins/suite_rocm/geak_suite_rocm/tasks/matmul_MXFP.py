"""rocm/test_matmul_MXFP: pipelined GEMM, plain fp16/fp32 or MX-scaled (e2m1 A x fp8 B).

Difficulty 4: the plain path is a standard pipelined GEMM; the scaled path needs MX formats
(packed fp4 values, e8m0 block scales) through tl.dot_scaled.
Fixes: the original checked the scaled product against a reference built with the candidate's
own upcast kernel (`mxfp_to_bf16_kernel`); here the oracle decodes e2m1, e8m0 and fp8 in torch
itself, and the harness never calls an upcast kernel, so candidates need not provide one.
Scaled cases require tl.dot_scaled (skipped, not passed, elsewhere) and use BLOCK_K = 64 also
when timed (the original timed BLOCK_K = 32, which it called not implemented, and swallowed the
errors). Scale bytes are drawn from 124..129 and B from rounded normal samples, so the check is
not dominated by overflow or denormals. The timed fp32-input cases are checked too.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import (
    cdiv,
    dtype_of,
    element_size,
    generator,
    launch,
    poisoned,
    randint,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Requirement, Task

# e2m1 (fp4) codes 0..15: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
FP8_TORCH = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
DOT_SCALED = [Requirement("dot_scaled", "MX-scaled product through tl.dot_scaled")]

TASK = Task(
    suite="rocm",
    id="test_matmul_MXFP",
    instruction=(
        "Write a Triton kernel `matmul_kernel(a_ptr, scale_ptr, b_ptr, output_ptr, M, N, "
        "K_MXFP, stride_am, stride_ak, stride_sm, stride_sk, stride_bk, stride_bn, stride_cm, "
        "stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, "
        "NUM_STAGES: tl.constexpr, a_type: tl.constexpr, b_type: tl.constexpr)` computing "
        "C = A @ B with fp32 accumulation, in one of two modes. Plain mode (a_type = b_type = "
        "None): A is M x K and B is K x N, both float16 or both float32, K = K_MXFP; "
        "scale_ptr is None and stride_sm = stride_sk = 0; C is float16. Scaled mode "
        "(a_type = 'e2m1', b_type = 'e4m3' or 'e5m2'): K = 32 * K_MXFP; A is uint8 "
        "M x (K / 2) holding two e2m1 (fp4) values per byte along K (element 2j in the low "
        "nibble, 2j+1 in the high nibble); scale_ptr is uint8 M x K_MXFP of e8m0 scales "
        "(byte s means 2^(s - 127)), scale (m, t) multiplying A's elements m, 32t..32t+31; B "
        "is uint8 K x N holding fp8 bits of b_type (OCP e4m3fn or e5m2); C is bfloat16. This "
        "is exactly tl.dot_scaled(a, scale, a_type, b, None, b_type). All matrices are "
        "addressed through the given strides (row-major here). BLOCK_K counts K elements "
        "(so an A tile is BLOCK_K / 2 bytes wide in scaled mode); M, N and K are multiples of "
        "the blocks. The harness launches grid (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), 1), one "
        "BLOCK_M x BLOCK_N tile per program with pid_m = pid % cdiv(M, BLOCK_M) varying "
        "fastest, num_warps=4, everything by keyword; NUM_STAGES is the software-pipelining "
        "depth for the K loop. Plain blocks 64/64/32, scaled 64/64/64. float32 inputs may use "
        "TF32: those cases compare with atol 3e-2, rtol 1e-2. No upcast kernel is needed."
    ),
    entry_points=[
        EntryPoint(
            "matmul_kernel",
            params=("a_ptr", "scale_ptr", "b_ptr", "output_ptr", "M", "N", "K_MXFP",
                    "stride_am", "stride_ak", "stride_sm", "stride_sk", "stride_bk",
                    "stride_bn", "stride_cm", "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K",
                    "NUM_STAGES", "a_type", "b_type"),
            constexpr=("BLOCK_M", "BLOCK_N", "BLOCK_K", "NUM_STAGES", "a_type", "b_type"),
        )
    ],
    harness="",
    difficulty=4,
    category="Quantization",
    case_requires=[Requirement("dot_scaled", "the MX-scaled cases")],
    tolerances={"float16": [1e-3, 1e-3], "bfloat16": [1e-2, 1e-2]},
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note=(
        "Plain (M, N, K): (512, 512, 128) fp16 with 4 stages; (512, 512, 128), "
        "(1024, 1024, 64), (2048, 1024, 32) fp16 and (1024, 1024, 64) fp32 with 2 stages. "
        "Scaled e2m1 x e4m3: (512, 512, 256) with 4 stages; K_MXFP = 128, 64, 32 for "
        "(512, 512), (1024, 1024), (2048, 1024) with 2 stages; e2m1 x e5m2: (512, 512, 256) "
        "and (1024, 1024, 2048). Scale bytes 124..129."
    ),
)


def _plain(m: int, n: int, k: int, dt: str, stages: int, timed: bool) -> Case:
    es = element_size(dt)
    tolerances = {"float16": [3e-2, 1e-2]} if dt == "float32" else {}  # room for TF32
    return Case(
        name=f"plain_{m}x{n}x{k}_{dt}_s{stages}",
        params={"M": m, "N": n, "K": k, "dtype": dt, "a_type": None, "b_type": None,
                "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "NUM_STAGES": stages,
                "num_warps": 4},
        flops=float(2 * m * n * k),
        bytes=float((m * k + k * n) * es + 2 * m * n),
        dtype=dt,
        timed=timed,
        tolerances=tolerances,
    )


def _scaled(m: int, n: int, k_mxfp: int, b_type: str, stages: int, timed: bool) -> Case:
    return Case(
        name=f"mx_e2m1x{b_type}_{m}x{n}x{32 * k_mxfp}_s{stages}",
        params={"M": m, "N": n, "K": 32 * k_mxfp, "dtype": "uint8", "a_type": "e2m1",
                "b_type": b_type, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64,
                "NUM_STAGES": stages, "num_warps": 4},
        flops=float(2 * m * n * 32 * k_mxfp),
        bytes=float(16 * m * k_mxfp + 32 * k_mxfp * n + m * k_mxfp + 2 * m * n),
        dtype=FP8_TORCH[b_type],
        timed=timed,
        requires=list(DOT_SCALED),
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            small = [_plain(64, 64, 64, "float16", 2, False), _plain(32, 64, 32, "float32", 2,
                                                                     False)]
            small[1].params.update(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16)
            return small
        return [
            _plain(512, 512, 128, "float16", 4, False),
            _scaled(512, 512, 8, "e4m3", 4, False),
            _scaled(512, 512, 8, "e5m2", 4, False),
            _plain(512, 512, 128, "float16", 2, True),
            _plain(1024, 1024, 64, "float16", 2, True),
            _plain(2048, 1024, 32, "float16", 2, True),
            _plain(1024, 1024, 64, "float32", 2, True),
            _scaled(512, 512, 128, "e4m3", 2, True),
            _scaled(1024, 1024, 64, "e4m3", 2, True),
            _scaled(2048, 1024, 32, "e4m3", 2, True),
            _scaled(1024, 1024, 64, "e5m2", 2, True),
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        g = generator(seed)
        p = case.params
        m, n, k = p["M"], p["N"], p["K"]
        if p["a_type"] is None:
            dtype = dtype_of(p["dtype"])
            return {"a": randn((m, k), dtype, device, g), "b": randn((k, n), dtype, device, g)}
        fp8 = dtype_of(FP8_TORCH[p["b_type"]])
        b = randn((k, n), torch.float32, "cpu", g).to(fp8).view(torch.uint8)
        return {
            "a": randint((m, k // 2), 0, 256, torch.uint8, device, g),
            "scale": randint((m, k // 32), 124, 130, torch.uint8, device, g),
            "b": b.to(device),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        p = case.params
        dtype = torch.float16 if p["a_type"] is None else torch.bfloat16
        return {"c": poisoned((p["M"], p["N"]), dtype, inputs["a"].device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        scale = inputs.get("scale")
        p = case.params
        m, n = p["M"], p["N"]
        scaled = p["a_type"] is not None
        launch(
            module.matmul_kernel,
            lambda meta: (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), 1),
            a_ptr=a, scale_ptr=scale, b_ptr=b, output_ptr=c, M=m, N=n,
            K_MXFP=p["K"] // 32 if scaled else p["K"],
            stride_am=a.stride(0), stride_ak=a.stride(1),
            stride_sm=scale.stride(0) if scaled else 0,
            stride_sk=scale.stride(1) if scaled else 0,
            stride_bk=b.stride(0), stride_bn=b.stride(1),
            stride_cm=c.stride(0), stride_cn=c.stride(1),
            BLOCK_M=p["BLOCK_M"], BLOCK_N=p["BLOCK_N"], BLOCK_K=p["BLOCK_K"],
            NUM_STAGES=p["NUM_STAGES"], a_type=p["a_type"], b_type=p["b_type"],
            num_warps=p["num_warps"],
        )

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        p = case.params
        if p["a_type"] is None:
            c = inputs["a"].double() @ inputs["b"].double()
            return {"c": c.to(torch.float16)}
        packed = inputs["a"].long()
        table = torch.tensor(E2M1_VALUES, dtype=torch.float64, device=packed.device)
        # element 2j sits in the low nibble of byte j, element 2j+1 in the high nibble
        a = torch.stack((table[packed & 0xF], table[packed >> 4]), dim=-1)
        a = a.reshape(p["M"], p["K"])
        scale = torch.exp2(inputs["scale"].double() - 127.0).repeat_interleave(32, dim=1)
        b = inputs["b"].view(dtype_of(FP8_TORCH[p["b_type"]])).double()
        return {"c": ((a * scale) @ b).to(torch.bfloat16)}
