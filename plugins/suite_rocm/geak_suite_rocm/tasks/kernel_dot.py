"""rocm/test_kernel_dot: in-place Z = Z @ Z for one contiguous 16x16 tile.

Difficulty 1: a single tl.dot on one fixed tile.
Fixes: the original only compiled the kernel; here it is launched (fp32 and fp16) and the
squared tile is compared with a float64 matmul. Z is re-cloned for every run, so repeated
timing calls do not overflow the checked result.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import dtype_of, element_size, generator, launch, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

TILE = 16

TASK = Task(
    suite="rocm",
    id="test_kernel_dot",
    instruction=(
        "Write a Triton kernel `kernel_dot(Z)` that squares a 16x16 matrix in place: it reads "
        "the contiguous row-major 16x16 tile at Z, computes Z @ Z with fp32 accumulation and "
        "writes the product back into Z (in Z's dtype, float32 or float16). The tile size 16 is "
        "fixed by the contract (there is no size argument). The harness launches grid (1,) with "
        "num_warps=4. float32 products may use TF32 within the float32 tolerance."
    ),
    entry_points=[EntryPoint("kernel_dot", params=("Z",))],
    harness="",
    difficulty=1,
    category="MatrixMultiply",
    tolerances={"float32": [1e-2, 1e-2], "float16": [1e-2, 1e-2]},
    outliers=OutlierSpec(inputs=("Z",)),
    shapes_note="Z: (16, 16) contiguous, float32 and float16, updated in place.",
)


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        return [
            Case(
                name=f"z16x16_{dt}",
                params={"dtype": dt, "num_warps": 4},
                flops=float(2 * TILE**3),
                bytes=float(3 * TILE * TILE * element_size(dt)),
                dtype=dt,
            )
            for dt in ("float32", "float16")
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        return {"Z": randn((TILE, TILE), dtype_of(case.params["dtype"]), device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"Z": inputs["Z"].clone()}  # in place: the kernel reads and overwrites it

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        launch(module.kernel_dot, (1,), Z=outputs["Z"], num_warps=case.params["num_warps"])

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"Z": inputs["Z"] @ inputs["Z"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        z = inputs["Z"].double()
        return {"Z": (z @ z).to(inputs["Z"].dtype)}
