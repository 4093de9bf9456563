"""rocm/test_triton_swizzle2d: the matrix that tl.swizzle2d's index mapping produces.

For every (i, j) of a size_i x size_j grid the linear index i*size_j + j is written at the
position tl.swizzle2d(i, j, size_i, size_j, size_g) returns.
Difficulty 2: an index permutation with a ragged last group; the obvious scalar double loop is
correct but very slow, a fast kernel needs the vectorised (inverse) mapping. The reference is
that loop, as in the original (one program, one element at a time), so speedups compare with
the published ones.
Fixes: the original checked one 5x7 float case only; the integer outputs it timed (int32,
int64) and ragged last groups are checked here too, exactly.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import dtype_of, element_size, launch, poisoned
from geak_core.api.tasks import Case, EntryPoint, Task

TASK = Task(
    suite="rocm",
    id="test_triton_swizzle2d",
    instruction=(
        "Write a Triton kernel `swizzle2d_kernel(output, size_i, size_j, size_g)` (all four "
        "runtime arguments). `output` is a contiguous row-major size_i x size_j matrix. For "
        "every i < size_i, j < size_j, store the value i*size_j + j at output[new_i, new_j], "
        "where (new_i, new_j) = tl.swizzle2d(i, j, size_i, size_j, size_g): rows are taken in "
        "groups of size_g (the last group may have fewer rows, g = min(size_i - first_row, "
        "size_g)) and, inside a group, consecutive linear indices run down the columns, i.e. "
        "with ij = i*size_j + j, group = ij // (size_g*size_j), first_row = group*size_g, "
        "k = ij % (size_g*size_j): new_i = first_row + k % g, new_j = k // g. Every element "
        "of output is written. Example (5, 7, 3): rows 0 3 6 9 12 15 18 / 1 4 7 10 13 16 19 / "
        "2 5 8 11 14 17 20 / 21 23 25 27 29 31 33 / 22 24 26 28 30 32 34. The output dtype is "
        "float32, int32 or int64 (store converts). The harness launches grid (1,) with "
        "num_warps=4: one program writes the whole matrix. Values must match exactly."
    ),
    entry_points=[
        EntryPoint("swizzle2d_kernel", params=("output", "size_i", "size_j", "size_g"))
    ],
    harness="",
    difficulty=2,
    category="Index",
    tolerances={"*": [0.0, 0.0]},
    outliers=None,
    outlier_note="The kernel has no input tensor: the output depends only on the sizes.",
    seeds=(0,),
    shapes_note=(
        "(size_i, size_j, size_g) = (5, 7, 3) float32; (32, 32, 4), (64, 64, 8), "
        "(128, 128, 16), (256, 256, 32), (512, 512, 32), (512, 64, 8), (64, 512, 8), "
        "(100, 96, 16) int32; (256, 256, 16), (512, 512, 32) int64."
    ),
)


def _case(si: int, sj: int, sg: int, dt: str, timed: bool = True) -> Case:
    return Case(
        name=f"{si}x{sj}_g{sg}_{dt}",
        params={"size_i": si, "size_j": sj, "size_g": sg, "dtype": dt, "num_warps": 4},
        flops=float(15 * si * sj),
        bytes=float(si * sj * element_size(dt)),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [
                _case(5, 7, 3, "float32", False),
                _case(12, 20, 4, "int32", False),
                _case(11, 30, 4, "int64", False),  # ragged last group of 3 rows
            ]
        int32 = [(32, 32, 4), (64, 64, 8), (128, 128, 16), (256, 256, 32), (512, 512, 32),
                 (512, 64, 8), (64, 512, 8), (100, 96, 16)]
        return [
            _case(5, 7, 3, "float32", False),
            *(_case(*s, "int32") for s in int32),
            _case(256, 256, 16, "int64"),
            _case(512, 512, 32, "int64"),
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        return {"device": device}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        p = case.params
        return {"output": poisoned((p["size_i"], p["size_j"]), dtype_of(p["dtype"]),
                                   inputs["device"])}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        launch(
            module.swizzle2d_kernel,
            (1,),
            output=outputs["output"],
            size_i=p["size_i"],
            size_j=p["size_j"],
            size_g=p["size_g"],
            num_warps=p["num_warps"],
        )

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        si, sj, sg = case.params["size_i"], case.params["size_j"], case.params["size_g"]
        expected = torch.empty((si, sj), dtype=torch.int64)
        for i in range(si):
            for j in range(sj):
                ij = i * sj + j
                first_row = (ij // (sg * sj)) * sg
                rows = min(si - first_row, sg)
                k = ij % (sg * sj)
                expected[first_row + k % rows, k // rows] = ij
        return {"output": expected.to(dtype_of(case.params["dtype"]))}
