"""rocm/test_flashattention_fwd: causal flash-attention forward, also writing the row
statistics (sum of exponentials L and maximum M of the scaled scores).

Difficulty 4: two chained tiled GEMMs with an online softmax, causal masking and rescaling.
Fixes: the original compared Out only, so L and M could be anything; here both are checked
(their exact meaning is stated in the instruction). The original gated the test on cc >= 9 and
its reference materialised every N x N score matrix; ours is computed per head in float64.
A head-dim-128 case (num_warps 8) is added to the original's D = 64 shapes.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

SM_SCALE = 0.2

TASK = Task(
    suite="rocm",
    id="test_flashattention_fwd",
    instruction=(
        "Write a Triton kernel `flash_fwd_kernel(Q, K, V, sm_scale, L, M, Out, stride_qz, "
        "stride_qh, stride_qm, stride_qk, stride_kz, stride_kh, stride_kn, stride_kk, "
        "stride_vz, stride_vh, stride_vk, stride_vn, stride_oz, stride_oh, stride_om, "
        "stride_on, Z, H, N_CTX, D0, BLOCK_M: tl.constexpr, BLOCK_DMODEL: tl.constexpr, "
        "BLOCK_N: tl.constexpr)` computing causal attention. Q, K, V, Out are (Z, H, N_CTX, D) "
        "fp16 tensors (contiguous; use the strides given); sm_scale is a runtime float "
        "(0.2). For each batch z, head h and query row i, with scores s_ij = sm_scale * "
        "(q_i . k_j) for keys j <= i (causal; keys j > i are excluded): "
        "M[z*H + h, i] = max_j s_ij, L[z*H + h, i] = sum_j exp(s_ij - M[z*H + h, i]) "
        "(natural exp), Out[z, h, i] = sum_j exp(s_ij - M) * v_j / L, stored as fp16. L and "
        "M are fp32 tensors of shape (Z*H, N_CTX), contiguous. D0 = Z*H*N_CTX. "
        "BLOCK_DMODEL = D (16 to 128); BLOCK_M = BLOCK_N (128 in the timed cases) and N_CTX "
        "is a multiple of BLOCK_M, so no masking is needed apart from the causal one. The "
        "harness launches grid (N_CTX // BLOCK_M, Z*H, 1), one BLOCK_M-row query block of one "
        "head per program (program_id(1) = z*H + h), with num_warps=4 (8 when D > 64) and "
        "num_stages=2; Z, H, N_CTX, D0 and the block sizes are passed by keyword like every "
        "other argument."
    ),
    entry_points=[
        EntryPoint(
            "flash_fwd_kernel",
            params=("Q", "K", "V", "sm_scale", "L", "M", "Out", "stride_qz", "stride_qh",
                    "stride_qm", "stride_qk", "stride_kz", "stride_kh", "stride_kn",
                    "stride_kk", "stride_vz", "stride_vh", "stride_vk", "stride_vn",
                    "stride_oz", "stride_oh", "stride_om", "stride_on", "Z", "H", "N_CTX",
                    "D0", "BLOCK_M", "BLOCK_DMODEL", "BLOCK_N"),
            constexpr=("BLOCK_M", "BLOCK_DMODEL", "BLOCK_N"),
        )
    ],
    harness="",
    difficulty=4,
    category="Fusion",
    tolerances={"float16": [1e-2, 0.0], "float32": [1e-4, 1e-4]},
    outliers=OutlierSpec(inputs=("q", "k", "v")),
    shapes_note=(
        "Z = 4, H = 48, D = 64, N_CTX in 128, 256, 512, 1024, 2048, 4096; plus Z = 4, H = 48, "
        "D = 128, N_CTX = 1024. q ~ N(0.1, 0.2^2), k ~ N(0.4, 0.2^2), v ~ N(0.3, 0.2^2), fp16; "
        "sm_scale 0.2; L and M fp32."
    ),
)


def _case(z: int, h: int, n: int, d: int, block: int, timed: bool) -> Case:
    return Case(
        name=f"z{z}_h{h}_n{n}_d{d}_b{block}",
        params={"Z": z, "H": h, "N_CTX": n, "D": d, "BLOCK": block,
                "num_warps": 4 if d <= 64 else 8, "num_stages": 2},
        flops=float(2 * z * h * n * n * d),
        bytes=float(4 * z * h * n * d * 2 + 2 * z * h * n * 4),
        dtype="float16",
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(1, 2, 128, 32, 64, False), _case(2, 1, 128, 16, 32, False)]
        cases = [_case(4, 48, n, 64, 128, True) for n in (128, 256, 512, 1024, 2048, 4096)]
        cases.append(_case(4, 48, 1024, 128, 128, True))
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        g = generator(seed)
        p = case.params
        shape = (p["Z"], p["H"], p["N_CTX"], p["D"])
        return {
            name: randn(shape, torch.float16, device, g, mean=mean, std=0.2)
            for name, mean in (("q", 0.1), ("k", 0.4), ("v", 0.3))
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        q = inputs["q"]
        z, h, n, _ = q.shape
        return {
            "out": poisoned(q.shape, q.dtype, q.device),
            "L": poisoned((z * h, n), torch.float32, q.device),
            "M": poisoned((z * h, n), torch.float32, q.device),
        }

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        q, k, v, o = inputs["q"], inputs["k"], inputs["v"], outputs["out"]
        p = case.params
        z, h, n = p["Z"], p["H"], p["N_CTX"]
        launch(
            module.flash_fwd_kernel,
            lambda meta: (cdiv(n, meta["BLOCK_M"]), z * h, 1),
            Q=q, K=k, V=v, sm_scale=SM_SCALE, L=outputs["L"], M=outputs["M"], Out=o,
            stride_qz=q.stride(0), stride_qh=q.stride(1), stride_qm=q.stride(2),
            stride_qk=q.stride(3),
            stride_kz=k.stride(0), stride_kh=k.stride(1), stride_kn=k.stride(2),
            stride_kk=k.stride(3),
            stride_vz=v.stride(0), stride_vh=v.stride(1), stride_vk=v.stride(2),
            stride_vn=v.stride(3),
            stride_oz=o.stride(0), stride_oh=o.stride(1), stride_om=o.stride(2),
            stride_on=o.stride(3),
            Z=z, H=h, N_CTX=n, D0=z * h * n,
            BLOCK_M=p["BLOCK"], BLOCK_DMODEL=p["D"], BLOCK_N=p["BLOCK"],
            num_warps=p["num_warps"], num_stages=p["num_stages"],
        )

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        z, h, n, d = q.shape
        out = torch.empty((z, h, n, d), dtype=torch.float16, device=q.device)
        row_sum = torch.empty((z * h, n), dtype=torch.float32, device=q.device)
        row_max = torch.empty((z * h, n), dtype=torch.float32, device=q.device)
        causal = torch.ones((n, n), dtype=torch.bool, device=q.device).tril()
        for zi in range(z):  # one head at a time keeps the n x n scores small
            for hi in range(h):
                scores = SM_SCALE * (q[zi, hi].double() @ k[zi, hi].double().t())
                scores = scores.masked_fill(~causal, float("-inf"))
                peak = scores.max(dim=1).values
                weights = torch.exp(scores - peak[:, None])
                total = weights.sum(dim=1)
                out[zi, hi] = ((weights @ v[zi, hi].double()) / total[:, None]).to(torch.float16)
                row_sum[zi * h + hi] = total.float()
                row_max[zi * h + hi] = peak.float()
        return {"out": out, "L": row_sum, "M": row_max}
