"""rocm/test_chained_matmul: out = cast(A @ B^T) @ C with the intermediate rounded to A's dtype.

Difficulty 3: two chained tl.dot per step with an on-chip intermediate (the
attention-like pattern without softmax); the row block of A must be reused
across the whole n loop.

Compared with the original (one integer-valued 32 x 64 x 128 case): besides
that exact case, real-valued data is checked on every timed configuration
and on a shape whose m and n are not multiples of the blocks; the output is
poisoned. Inputs are scaled (A, B ~ N(0, 1/sqrt(k)), C ~ N(0, 1/n)) so the
intermediate and the result are O(1) in fp16. Of the original's 150
generated perf configurations, 8 representative ones (K = 64..512, block
sizes within the original's shared-memory filter) are kept.
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
    poisoned,
    randint,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

TASK = Task(
    suite="rocm",
    id="test_chained_matmul",
    instruction=(
        "Write a Triton kernel `chained_matmul_kernel` computing out = cast(A @ B^T) @ C, where "
        "the intermediate S = A @ B^T (accumulated in float32) is rounded to A's dtype before the "
        "second product (accumulated in float32, stored in out's dtype).\n"
        "Signature: chained_matmul_kernel(A, B, C, out, m, n, k, block_m, block_n, block_k); k, "
        "block_m, block_n, block_k are tl.constexpr. A is (m, k), B is (n, k), C is (n, k), out "
        "is (m, k); all contiguous row-major float16.\n"
        "Launch: grid = (cdiv(m, block_m),); one program computes block_m full rows of out, "
        "looping over n in block_n steps (per step: S_blk = A_rows @ B_blk^T, out_rows += "
        "cast(S_blk) @ C_blk). The harness passes block_m, block_n (16..64) and block_k = k "
        "(k = 64..512; block_k must equal k), all by keyword. m and n are not always multiples "
        "of block_m / block_n: mask rows and never write outside out."
    ),
    entry_points=[
        EntryPoint(
            "chained_matmul_kernel",
            params=("A", "B", "C", "out", "m", "n", "k", "block_m", "block_n", "block_k"),
            constexpr=("k", "block_m", "block_n", "block_k"),
        )
    ],
    harness="",
    difficulty=3,
    category="Fusion",
    tolerances={"float16": [5e-3, 5e-3]},
    outliers=OutlierSpec(inputs=("A", "B", "C")),
    shapes_note=(
        "(m, n, k) / (block_m, block_n), float16: correctness (32,64,128)/(16,32) with 0/1 "
        "values (exact) and (1000,200,64)/(64,64); timed (1024,1024,64)/(64,64), "
        "(4096,2048,64)/(64,32), (2048,1024,128)/(64,64), (4096,4096,128)/(32,32), "
        "(1024,2048,256)/(32,32), (8192,1024,256)/(64,16), (2048,512,512)/(16,16), "
        "(4096,1024,512)/(16,16)."
    ),
)

TIMED = [
    (1024, 1024, 64, 64, 64),
    (4096, 2048, 64, 64, 32),
    (2048, 1024, 128, 64, 64),
    (4096, 4096, 128, 32, 32),
    (1024, 2048, 256, 32, 32),
    (8192, 1024, 256, 64, 16),
    (2048, 512, 512, 16, 16),
    (4096, 1024, 512, 16, 16),
]
# (m, n, k, block_m, block_n, integer-valued)
SMALL = [(32, 64, 128, 16, 32, True), (40, 50, 32, 16, 16, False), (64, 32, 64, 32, 16, False)]


def _case(m: int, n: int, k: int, bm: int, bn: int, integer: bool, timed: bool) -> Case:
    es = element_size("float16")
    return Case(
        name=f"m{m}_n{n}_k{k}_bm{bm}_bn{bn}{'_int' if integer else ''}",
        params={"m": m, "n": n, "k": k, "block_m": bm, "block_n": bn, "integer": integer},
        flops=float(4 * m * n * k),
        bytes=float((2 * m * k + 2 * n * k) * es),
        dtype="float16",
        timed=timed,
        tolerances={"float16": [0.0, 0.0]} if integer else {},
        note="0/1 inputs: every product and sum is exact" if integer else "",
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(m, n, k, bm, bn, i, False) for m, n, k, bm, bn, i in SMALL]
        cases = [
            _case(32, 64, 128, 16, 32, True, False),
            _case(1000, 200, 64, 64, 64, False, False),
        ]
        cases += [_case(m, n, k, bm, bn, False, True) for m, n, k, bm, bn in TIMED]
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        p = case.params
        g = generator(seed)
        m, n, k = p["m"], p["n"], p["k"]
        fp16 = dtype_of("float16")
        if p["integer"]:
            return {
                "A": randint((m, k), 0, 2, fp16, device, g),
                "B": randint((n, k), 0, 2, fp16, device, g),
                "C": randint((n, k), 0, 2, fp16, device, g),
            }
        std = 1.0 / math.sqrt(math.sqrt(k))
        return {
            "A": randn((m, k), torch.float16, device, g, std=std),
            "B": randn((n, k), torch.float16, device, g, std=std),
            "C": randn((n, k), torch.float16, device, g, std=1.0 / math.sqrt(n)),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a = inputs["A"]
        return {"out": poisoned(a.shape, a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        m = p["m"]
        launch(
            module.chained_matmul_kernel,
            lambda meta: (cdiv(m, meta["block_m"]),),
            A=inputs["A"],
            B=inputs["B"],
            C=inputs["C"],
            out=outputs["out"],
            m=m,
            n=p["n"],
            k=p["k"],
            block_m=p["block_m"],
            block_n=p["block_n"],
            block_k=p["k"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"out": (inputs["A"] @ inputs["B"].T) @ inputs["C"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        a, b, c = (inputs[x].to(torch.float64) for x in ("A", "B", "C"))
        s = (a @ b.T).to(inputs["A"].dtype).to(torch.float64)
        return {"out": s @ c}
