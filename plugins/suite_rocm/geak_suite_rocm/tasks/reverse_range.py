"""rocm/test_reverse_range: out[x] = in[512 - x] for x = 0..511.

Difficulty 1: one program, one reversed gather of a fixed 512-element range.
Fixes: the original checked fp32 only; every dtype it timed (fp32, fp16, bf16) is checked here
too, and values are compared exactly.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import dtype_of, element_size, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

SIZE = 512
INPUT_SIZE = SIZE + 4

TASK = Task(
    suite="rocm",
    id="test_reverse_range",
    instruction=(
        "Write a Triton kernel `reverse_range(in_ptr, out_ptr)` that writes out[x] = in[512 - x] "
        "for x = 0..511 (so in[512] lands in out[0] and in[1] in out[511]; in[0] is never "
        "read). The size 512 is fixed by the contract (there is no size argument). `in_ptr` "
        f"points at a contiguous 1-D tensor of {INPUT_SIZE} elements, `out_ptr` at a contiguous "
        "1-D tensor of 512 elements of the same dtype (float32, float16 or bfloat16). The "
        "harness launches grid (1,) with num_warps=4: one program does the whole range. The "
        "copy must be exact."
    ),
    entry_points=[EntryPoint("reverse_range", params=("in_ptr", "out_ptr"))],
    harness="",
    difficulty=1,
    category="Index",
    tolerances={"*": [0.0, 0.0]},
    outliers=OutlierSpec(inputs=("data",)),
    shapes_note=f"in: ({INPUT_SIZE},), out: ({SIZE},); float32, float16, bfloat16.",
)


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        dtypes = ("float32", "float16") if mode == "small" else ("float32", "float16", "bfloat16")
        return [
            Case(
                name=f"n{SIZE}_{dt}",
                params={"dtype": dt, "num_warps": 4},
                flops=0.0,
                bytes=float(2 * SIZE * element_size(dt)),
                dtype=dt,
            )
            for dt in dtypes
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        return {"data": randn((INPUT_SIZE,), dtype_of(case.params["dtype"]), device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        data = inputs["data"]
        return {"out": poisoned((SIZE,), data.dtype, data.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        launch(
            module.reverse_range,
            (1,),
            in_ptr=inputs["data"],
            out_ptr=outputs["out"],
            num_warps=case.params["num_warps"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"out": inputs["data"][1 : SIZE + 1].flip(0)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"out": inputs["data"][1 : SIZE + 1].flip(0)}
