"""rocm/test_batched_vecmat: a batch of vector-matrix products, C[m, n] = sum_k A[m, k] * B[m, n, k].

Difficulty 2: a tiled 3-D broadcast-multiply-reduce without tl.dot; bandwidth
bound on B, so the work is in the memory access pattern.

Compared with the original: the timed configurations are checked too (the
original checked one integer-valued fp32 case); float inputs are real-valued
with B scaled by 1/sqrt(K) so outputs are O(1) and a tolerance means the same
at every K; the output is poisoned and allocated outside the timed call. Of
the original's 28 runnable perf configurations (5 shapes x 3 block configs x
2 dtypes) one block configuration per shape is kept, in both dtypes.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import (
    dtype_of,
    element_size,
    generator,
    launch,
    poisoned,
    randint,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

TASK = Task(
    suite="rocm",
    id="test_batched_vecmat",
    instruction=(
        "Write a Triton kernel `batched_vecmat` computing C[m, n] = sum_k A[m, k] * B[m, n, k] "
        "(each row of A times its own N x K matrix).\n"
        "Signature: batched_vecmat(A, B, dim_m, dim_n, dim_k, output, block_m, block_n, "
        "block_k); block_m, block_n and block_k are tl.constexpr. A is (dim_m, dim_k), B is "
        "(dim_m, dim_n, dim_k), output is (dim_m, dim_n); all contiguous (no stride arguments).\n"
        "Launch: grid = (dim_m // block_m, dim_n // block_n); program (i, j) computes the "
        "block_m x block_n tile at rows i*block_m, columns j*block_n, looping over K in block_k "
        "steps. The harness passes block_m/block_n/block_k (e.g. 16/32/64), num_warps=4 and "
        "num_stages=1; dim_m, dim_n and dim_k are always multiples of the block sizes it passes "
        "(an autotuned kernel must only pick block sizes that divide them).\n"
        "Dtypes: A, B and output share one dtype (float32 or float16); accumulate in float32."
    ),
    entry_points=[
        EntryPoint(
            "batched_vecmat",
            params=("A", "B", "dim_m", "dim_n", "dim_k", "output", "block_m", "block_n", "block_k"),
            constexpr=("block_m", "block_n", "block_k"),
        )
    ],
    harness="",
    difficulty=2,
    category="MatrixMultiply",
    tolerances={"float32": [1e-4, 1e-4], "float16": [1e-2, 1e-2]},
    outliers=OutlierSpec(inputs=("A", "B")),
    shapes_note=(
        "(M, N, K) / (block_m, block_n, block_k): correctness 128^3 / (16,32,64) with integer "
        "values 0..3 in float32 (exact); timed (128,128,128)/(16,32,64), (256,256,256)/"
        "(32,32,128), (512,64,1024)/(16,64,64), (64,512,256)/(16,32,64), (1024,32,512)/"
        "(32,32,128), each in float32 and float16."
    ),
)

TIMED = [
    ((128, 128, 128), (16, 32, 64)),
    ((256, 256, 256), (32, 32, 128)),
    ((512, 64, 1024), (16, 64, 64)),
    ((64, 512, 256), (16, 32, 64)),
    ((1024, 32, 512), (32, 32, 128)),
]
SMALL = [
    ((32, 32, 32), (16, 16, 16), "float32", False),
    ((32, 32, 64), (16, 32, 64), "float32", True),
    ((16, 64, 96), (8, 16, 32), "float16", False),
]


def _case(shape, blocks, dt: str, integer: bool, timed: bool) -> Case:
    m, n, k = shape
    es = element_size(dt)
    return Case(
        name=f"m{m}_n{n}_k{k}_b{'x'.join(map(str, blocks))}_{dt}{'_int' if integer else ''}",
        params={"M": m, "N": n, "K": k, "blocks": list(blocks), "dtype": dt, "integer": integer},
        flops=float(2 * m * n * k),
        bytes=float((m * k + m * n * k + m * n) * es),
        dtype=dt,
        timed=timed,
        tolerances={dt: [0.0, 0.0]} if integer else {},
        note="integer-valued inputs: the result is exact" if integer else "",
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(s, b, dt, i, False) for s, b, dt, i in SMALL]
        cases = [_case((128, 128, 128), (16, 32, 64), "float32", True, False)]
        cases += [_case(s, b, dt, False, True) for s, b in TIMED for dt in ("float32", "float16")]
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        g = generator(seed)
        dtype = dtype_of(p["dtype"])
        m, n, k = p["M"], p["N"], p["K"]
        if p["integer"]:
            return {
                "A": randint((m, k), 0, 4, dtype, device, g),
                "B": randint((m, n, k), 0, 4, dtype, device, g),
            }
        return {
            "A": randn((m, k), dtype, device, g),
            "B": randn((m, n, k), dtype, device, g, std=1.0 / math.sqrt(k)),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a = inputs["A"]
        return {"output": poisoned((case.params["M"], case.params["N"]), a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        bm, bn, bk = p["blocks"]
        launch(
            module.batched_vecmat,
            lambda meta: (p["M"] // meta["block_m"], p["N"] // meta["block_n"]),
            A=inputs["A"],
            B=inputs["B"],
            dim_m=p["M"],
            dim_n=p["N"],
            dim_k=p["K"],
            output=outputs["output"],
            block_m=bm,
            block_n=bn,
            block_k=bk,
            num_warps=4,
            num_stages=1,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"output": torch.einsum("mk,mnk->mn", inputs["A"], inputs["B"])}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        a = inputs["A"].to(torch.float64)
        b = inputs["B"].to(torch.float64)
        return {"output": torch.einsum("mk,mnk->mn", a, b)}
