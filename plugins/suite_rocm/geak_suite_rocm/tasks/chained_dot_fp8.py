"""rocm/test_chained_dot_fp8: O = quant(quant(Q @ K^T * s_scale) @ V^T * acc_scale), batched.

Difficulty 4: two chained tl.dot per step (attention without softmax) with
fp8 operands, an fp8 re-quantised intermediate and per-tensor scale folding;
the fp16 variant runs the same chain unscaled.

Compared with the original: it runs on NVIDIA (OCP float8_e4m3fn instead of
MI300's e4m3fnuz, which stays in use on pre-gfx95 AMD GPUs; the AMD-only
launch keywords and the matrix-instruction-size sweep are dropped, and
num_warps is 8 for 128 x 128 fp8 tiles, which spill with 4); the
timed fp16 variant, unreachable in the original's correctness test, is
checked; each of Q, K, V and Out is offset by its own batch stride (the
original used Q's for all four, wrong for K and V when batch > 1 and M != N,
which the timed shapes are); two fp8 rounding steps allow a 1-ulp difference
in the fp8 output (the original demanded bit-exactness against a different
GEMM implementation); the output is poisoned. The original's 4 correctness
and 20 perf cases become 3 correctness and 10 timed cases (5 shapes x fp8/fp16).
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, generator, is_hip, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Requirement, Task

PARAMS = (
    "Q", "K", "V", "Out", "q_desc", "k_desc", "v_desc", "s_sc", "s_desc", "o_sc", "stride_qz",
    "stride_qm", "stride_qd", "stride_kz", "stride_kn", "stride_kd", "stride_vz", "stride_vd",
    "stride_vn", "stride_oz", "stride_om", "stride_od", "Z", "M", "N", "BLOCK_D", "BLOCK_M",
    "BLOCK_N", "USE_FP8",
)
ONE_ULP = [0.25, 0.13]

TASK = Task(
    suite="rocm",
    id="test_chained_dot_fp8",
    instruction=(
        "Write a Triton kernel `_chained_dot` computing, for every batch b, O[b] = "
        "cast_out((cast_mid(Q[b] @ K[b]^T * s_scale) @ V[b]^T) * acc_scale), where Q is (B, M, D), "
        "K is (B, N, D), V is (B, D, N) (note the order), Out is (B, M, D), all in one dtype.\n"
        "USE_FP8 = True: Q, K, V, Out are float8_e4m3fn (float8_e4m3fnuz on pre-gfx95 AMD GPUs); "
        "s_scale = q_desc * k_desc * s_sc and acc_scale = s_desc * v_desc * o_sc (six runtime "
        "floats); cast_mid and cast_out round to the fp8 type (the scales keep every value in "
        "range). USE_FP8 = False: everything is float16, the six scales are 1 and must be "
        "ignored; cast_mid/cast_out round to float16. Both products accumulate in float32.\n"
        "Signature: _chained_dot(" + ", ".join(PARAMS) + "); BLOCK_D, BLOCK_M, BLOCK_N and "
        "USE_FP8 are tl.constexpr. Element (b, i, j) of each tensor is at base + b * stride_*z + "
        "i * (second stride) + j * (third stride), each tensor with its own batch stride.\n"
        "Launch: grid = (cdiv(M, BLOCK_M), B, 1); program (i, b) computes rows i*BLOCK_M.. of "
        "O[b], looping over N in BLOCK_N steps. The harness passes Z = B, M, N, BLOCK_D = D "
        "(16..128), BLOCK_M = 128 (fp8) or 256 (fp16) and BLOCK_N = 32, each clipped to the "
        "largest power of two <= M resp. N, USE_FP8, num_warps (8, or 4 for fp8 tiles of fewer than "
        "16384 elements) and num_stages, all by keyword; BLOCK_M/BLOCK_N may be tuned. M and N are not always "
        "multiples of the blocks: mask rows and the N tail."
    ),
    entry_points=[
        EntryPoint(
            "_chained_dot", params=PARAMS, constexpr=("BLOCK_D", "BLOCK_M", "BLOCK_N", "USE_FP8")
        )
    ],
    harness="",
    difficulty=4,
    category="Fusion",
    case_requires=[Requirement("fp8", "the fp8 cases")],
    tolerances={"float8_e4m3fn": ONE_ULP, "float8_e4m3fnuz": ONE_ULP},
    outliers=OutlierSpec(inputs=("Q", "K", "V")),
    shapes_note=(
        "(B, M, N, D): correctness fp8 (1,128,64,32), (1,256,128,128), fp16 (2,256,128,64); "
        "timed B = 2, (M, N, D) in (128,64,32), (256,128,64), (512,128,128), (1024,256,128), "
        "(2048,512,64), each fp8 and fp16. Q, K, V ~ N(0, 0.5^2) before quantisation; fp8 "
        "scales are powers of two from the tensors' amax."
    ),
)

FP8_NEEDS = Requirement("fp8", "fp8 operands")
# (B, M, N, D, fp8, timed)
FULL = [
    (1, 128, 64, 32, True, False),
    (1, 256, 128, 128, True, False),
] + [
    (2, m, n, d, fp8, True)
    for m, n, d in ((128, 64, 32), (256, 128, 64), (512, 128, 128), (1024, 256, 128), (2048, 512, 64))
    for fp8 in (True, False)
]
SMALL = [
    (1, 32, 64, 32, True),
    (2, 48, 40, 16, True),
    (2, 32, 64, 16, False),
    (1, 40, 32, 32, False),
]


def fp8_type():
    import torch

    if is_hip() and torch.cuda.is_available():
        arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
        if not arch.startswith("gfx95"):
            return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def pow2_floor(x: int) -> int:
    return 1 << (x.bit_length() - 1)


def power_of_two_scale(amax: float, fmax: float) -> float:
    """2^(floor(log2(fmax / amax)) - 1): maps |x| <= amax into half the fp8 range."""
    return 2.0 ** (math.floor(math.log2(fmax / max(amax, 1e-30))) - 1)


def _case(b: int, m: int, n: int, d: int, fp8: bool, timed: bool) -> Case:
    es = 1 if fp8 else 2
    return Case(
        name=f"b{b}_m{m}_n{n}_d{d}_{'fp8' if fp8 else 'fp16'}",
        params={"B": b, "M": m, "N": n, "D": d, "fp8": fp8},
        flops=float(b * 4 * m * n * d),
        bytes=float(b * (2 * m * d + 2 * n * d) * es),
        dtype="float8_e4m3fn" if fp8 else "float16",
        timed=timed,
        requires=[FP8_NEEDS] if fp8 else [],
        outliers=not fp8,
        note=(
            "fp8 operands are quantised against their own range: scaled outliers would leave it, "
            "so stage 2 is skipped" if fp8 else ""
        ),
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(*spec, False) for spec in SMALL]
        return [_case(*spec) for spec in FULL]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        p = case.params
        g = generator(seed)
        b, m, n, d = p["B"], p["M"], p["N"], p["D"]
        q = randn((b, m, d), torch.float32, "cpu", g, std=0.5)
        k = randn((b, n, d), torch.float32, "cpu", g, std=0.5)
        v = randn((b, d, n), torch.float32, "cpu", g, std=0.5)
        if not p["fp8"]:
            inputs: dict[str, Any] = {
                name: x.to(device=device, dtype=torch.float16)
                for name, x in (("Q", q), ("K", k), ("V", v))
            }
            inputs.update(dict.fromkeys(("q_desc", "k_desc", "v_desc", "s_sc", "s_desc", "o_sc"), 1.0))
            return inputs

        fp8 = fp8_type()
        fmax = torch.finfo(fp8).max

        def quantise(x):
            scale = power_of_two_scale(x.abs().max().item(), fmax)
            return (x * scale).clamp(-fmax, fmax).to(fp8), 1.0 / scale

        q8, q_desc = quantise(q)
        k8, k_desc = quantise(k)
        v8, v_desc = quantise(v)
        s = (q8.double() @ k8.double().transpose(1, 2)) * (q_desc * k_desc)
        s_sc = power_of_two_scale(s.abs().max().item(), fmax)
        s8 = (s * s_sc).to(torch.float32).to(fp8)
        o = (s8.double() @ v8.double().transpose(1, 2)) * (v_desc / s_sc)
        o_sc = power_of_two_scale(o.abs().max().item(), fmax)
        return {
            "Q": q8.to(device), "K": k8.to(device), "V": v8.to(device),
            "q_desc": q_desc, "k_desc": k_desc, "v_desc": v_desc,
            "s_sc": s_sc, "s_desc": 1.0 / s_sc, "o_sc": o_sc,
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        q = inputs["Q"]
        return {"Out": poisoned(q.shape, q.dtype, q.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        q, k, v, out = inputs["Q"], inputs["K"], inputs["V"], outputs["Out"]
        b, m, n, d = p["B"], p["M"], p["N"], p["D"]
        fp8 = p["fp8"]
        block_m = min(128 if fp8 else 256, pow2_floor(m))
        launch(
            module._chained_dot,
            lambda meta: (cdiv(m, meta["BLOCK_M"]), b, 1),
            Q=q, K=k, V=v, Out=out,
            q_desc=inputs["q_desc"], k_desc=inputs["k_desc"], v_desc=inputs["v_desc"],
            s_sc=inputs["s_sc"], s_desc=inputs["s_desc"], o_sc=inputs["o_sc"],
            stride_qz=q.stride(0), stride_qm=q.stride(1), stride_qd=q.stride(2),
            stride_kz=k.stride(0), stride_kn=k.stride(1), stride_kd=k.stride(2),
            stride_vz=v.stride(0), stride_vd=v.stride(1), stride_vn=v.stride(2),
            stride_oz=out.stride(0), stride_om=out.stride(1), stride_od=out.stride(2),
            Z=b, M=m, N=n,
            BLOCK_D=d,
            BLOCK_M=block_m,
            BLOCK_N=min(32, pow2_floor(n)),
            USE_FP8=fp8,
            num_warps=4 if fp8 and block_m * d < 16384 else 8,
            num_stages=2,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        if case.params["fp8"]:
            raise NotImplementedError("PyTorch has no public eager fp8 matmul")
        s = inputs["Q"] @ inputs["K"].transpose(1, 2)
        return {"Out": s @ inputs["V"].transpose(1, 2)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        q, k, v = (inputs[x].to(torch.float64) for x in ("Q", "K", "V"))
        mid = inputs["V"].dtype
        s = q @ k.transpose(1, 2)
        if case.params["fp8"]:
            s = s * (inputs["q_desc"] * inputs["k_desc"] * inputs["s_sc"])
        s = s.to(torch.float32).to(mid).to(torch.float64)
        o = s @ v.transpose(1, 2)
        if case.params["fp8"]:
            o = o * (inputs["s_desc"] * inputs["v_desc"] * inputs["o_sc"])
        return {"Out": o.to(torch.float32).to(mid)}
