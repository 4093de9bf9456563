"""rocm/test_triton_flip: flip every row of an N x M tile along its last dimension.

Difficulty 1: a reversed copy of one power-of-two tile.
Fixes: the original correctness test launched N programs that each flipped the whole tile (every
program redid the same work); here the harness launches grid (1,), one program per tile, as the
original timing did, so nothing is done twice. tl.flip without a dimension raises a TypeError under
Triton 3.6; the reference, which follows the original (one load, tl.flip, one store), names the
dimension. Outputs are compared exactly.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import element_size, launch
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._tiles import ValueTileHarness

TASK = Task(
    suite="rocm",
    id="test_triton_flip",
    instruction=(
        "Write a Triton kernel `flip_kernel(X, Z, N: tl.constexpr, M: tl.constexpr)` that "
        "flips each row of a contiguous row-major N x M tile: Z[r, c] = X[r, M - 1 - c]. N "
        "(rows) and M (columns) are powers of two, passed by keyword; X and Z have the same "
        "dtype (int32, float16, float32 or bfloat16). The harness launches grid (1,) with "
        "num_warps=4: one program flips the whole tile (loop over rows inside the kernel if "
        "that helps; program ids are not used). The result must be exact. Note: under Triton "
        "3.6, tl.flip(x) without a dimension raises a TypeError; write tl.flip(x, dim)."
    ),
    entry_points=[
        EntryPoint("flip_kernel", params=("X", "Z", "N", "M"), constexpr=("N", "M"))
    ],
    harness="",
    difficulty=1,
    category="Index",
    tolerances={"*": [0.0, 0.0]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(N, M) = (1, 512) int32, (8, 64) float16, (256, 16) float32, (512, 8) bfloat16; "
        "(128, 512) and (1024, 64) in int32, float16, float32 and bfloat16; contiguous."
    ),
)

DTYPES = ("int32", "float16", "float32", "bfloat16")


def _case(n: int, m: int, dt: str, timed: bool) -> Case:
    return Case(
        name=f"{n}x{m}_{dt}",
        params={"N": n, "M": m, "dtype": dt, "num_warps": 4},
        flops=0.0,
        bytes=float(2 * n * m * element_size(dt)),
        dtype=dt,
        timed=timed,
    )


class Harness(ValueTileHarness):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(8, 64, "float32", False), _case(64, 128, "int32", False),
                    _case(4, 32, "bfloat16", False)]
        checks = [((1, 512), "int32"), ((8, 64), "float16"), ((256, 16), "float32"),
                  ((512, 8), "bfloat16")]
        return [
            *(_case(n, m, dt, False) for (n, m), dt in checks),
            *(_case(n, m, dt, True) for n, m in ((128, 512), (1024, 64)) for dt in DTYPES),
        ]

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        launch(module.flip_kernel, (1,), **self.tile_args(case, inputs, outputs),
               num_warps=case.params["num_warps"])

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"z": inputs["x"].flip(1)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"z": inputs["x"].flip(1)}
