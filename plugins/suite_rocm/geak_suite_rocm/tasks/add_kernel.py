"""rocm/test_add_kernel: elementwise z = x + y (difficulty 1: one masked load/store pattern)."""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, dtype_of, element_size, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, Task

TASK = Task(
    suite="rocm",
    id="test_add_kernel",
    instruction=(
        "Write a Triton kernel `add_kernel` that adds two 1-D tensors elementwise: "
        "output[i] = x[i] + y[i] for i < n_elements. Each program handles one contiguous "
        "chunk of BLOCK_SIZE elements (grid = cdiv(n_elements, BLOCK_SIZE)); mask the tail."
    ),
    entry_points=[
        EntryPoint(
            "add_kernel",
            params=("x_ptr", "y_ptr", "output_ptr", "n_elements", "BLOCK_SIZE"),
            constexpr=("BLOCK_SIZE",),
        )
    ],
    harness="",
    difficulty=1,
    category="Math",
    tolerances={"float16": [1e-3, 1e-2]},
    shapes_note="1-D, n_elements = 98432 (correctness) and up to 1048576; float16 and float32.",
)


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        sizes = [(1000, 256), (4099, 1024)] if mode == "small" else [(98432, 1024), (1048576, 2048)]
        return [
            Case(
                name=f"n{n}_{dt}",
                params={"n": n, "dtype": dt, "BLOCK_SIZE": block},
                flops=float(n),
                bytes=float(3 * n * element_size(dt)),
                dtype=dt,
            )
            for n, block in sizes
            for dt in ("float16", "float32")
        ]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        dtype = dtype_of(case.params["dtype"])
        n = case.params["n"]
        return {"x": randn((n,), dtype, device, g), "y": randn((n,), dtype, device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        x = inputs["x"]
        return {"output": poisoned(x.shape, x.dtype, x.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        n = case.params["n"]
        launch(
            module.add_kernel,
            lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),),
            x_ptr=inputs["x"],
            y_ptr=inputs["y"],
            output_ptr=outputs["output"],
            n_elements=n,
            BLOCK_SIZE=case.params["BLOCK_SIZE"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"output": inputs["x"] + inputs["y"]}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"output": inputs["x"] + inputs["y"]}
