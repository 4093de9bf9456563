"""rocm/test_triton_sort: sort every row of an N x M tile, ascending or descending.

Difficulty 2: a per-row sort of a power-of-two tile (tl.sort or a hand-written bitonic network).
Fixes: the original correctness test launched N programs that each sorted the whole tile (every
program redid the same work); here the harness launches grid (1,), one program per tile, as the
original timing did, so nothing is done twice. Outputs are compared exactly.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.harness import element_size, launch
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._tiles import ValueTileHarness

TASK = Task(
    suite="rocm",
    id="test_triton_sort",
    instruction=(
        "Write a Triton kernel `sort_kernel(X, Z, N: tl.constexpr, M: tl.constexpr, "
        "descending: tl.constexpr)` that sorts each row of a contiguous row-major N x M tile: "
        "Z[r, :] = sorted(X[r, :]), ascending, or descending when `descending` is True. N "
        "(rows) and M (columns) are powers of two; N, M and descending are passed by keyword. "
        "X and Z have the same dtype (int32, float16, float32 or bfloat16); there are no NaNs. "
        "The harness launches grid (1,) with num_warps=4: one program sorts the whole tile "
        "(loop over rows inside the kernel if that helps; program ids are not used). The "
        "sorted values must be exact."
    ),
    entry_points=[
        EntryPoint(
            "sort_kernel",
            params=("X", "Z", "N", "M", "descending"),
            constexpr=("N", "M", "descending"),
        )
    ],
    harness="",
    difficulty=2,
    category="Index",
    tolerances={"*": [0.0, 0.0]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(N, M) = (1, 512), (8, 64), (256, 16), (512, 8) (one dtype and direction each); "
        "(1, 1024), (1, 16384), (8, 2048), (64, 256), (256, 128) timed, dtypes int32, float16, "
        "float32, bfloat16, ascending and descending; contiguous."
    ),
)


def _case(n: int, m: int, dt: str, descending: bool, timed: bool) -> Case:
    return Case(
        name=f"{n}x{m}_{dt}_{'desc' if descending else 'asc'}",
        params={"N": n, "M": m, "dtype": dt, "descending": descending, "num_warps": 4},
        flops=float(n * m * math.log2(m)),
        bytes=float(2 * n * m * element_size(dt)),
        dtype=dt,
        timed=timed,
    )


class Harness(ValueTileHarness):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [
                _case(8, 64, "float32", False, False),
                _case(4, 32, "int32", True, False),
                _case(2, 128, "bfloat16", False, False),
                _case(16, 64, "float16", True, False),
            ]
        checks = [
            _case(1, 512, "int32", False, False),
            _case(8, 64, "float16", True, False),
            _case(256, 16, "float32", False, False),
            _case(512, 8, "bfloat16", True, False),
        ]
        timed = [
            _case(1, 1024, "float32", False, True),
            _case(1, 16384, "float32", True, True),
            _case(8, 2048, "float16", False, True),
            _case(8, 2048, "int32", True, True),
            _case(64, 256, "bfloat16", False, True),
            _case(256, 128, "float16", True, True),
            _case(256, 128, "float32", False, True),
        ]
        return checks + timed

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        launch(module.sort_kernel, (1,), **self.tile_args(case, inputs, outputs),
               descending=case.params["descending"], num_warps=case.params["num_warps"])

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"z": torch.sort(inputs["x"], dim=1, descending=case.params["descending"]).values}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        return {"z": torch.sort(x, dim=1, descending=case.params["descending"]).values}
