"""Hook implementations: registers the ``hello`` suite."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core import hookimpl
from geak_core.errors import InputError
from geak_core.harness import Harness, cdiv, generator, launch, poisoned, randn
from geak_core.tasks import Case, EntryPoint, Task

SCALE = Task(
    suite="hello",
    id="scale",
    instruction="Write a Triton kernel `scale_kernel` computing out[i] = alpha * x[i] for i < n, "
    "one BLOCK-sized chunk per program.",
    entry_points=[EntryPoint("scale_kernel", params=("x_ptr", "out_ptr", "alpha", "n", "BLOCK"),
                             constexpr=("BLOCK",))],
    harness="geak_hello_suite.plugin:ScaleHarness",
    reference=str(Path(__file__).with_name("reference.py")),
    difficulty=1,
    category="Math",
)


class ScaleHarness(Harness):
    def cases(self, mode: str) -> list[Case]:
        n = 1000 if mode == "small" else 1 << 24
        return [Case(f"n{n}", {"n": n}, flops=float(n), bytes=8.0 * n, dtype="float32")]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        return {"x": randn((case.params["n"],), torch.float32, device, generator(seed)), "alpha": 1.5}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        x = inputs["x"]
        return {"out": poisoned(x.shape, x.dtype, x.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        n = case.params["n"]
        launch(module.scale_kernel, lambda meta: (cdiv(n, meta["BLOCK"]),), x_ptr=inputs["x"],
               out_ptr=outputs["out"], alpha=inputs["alpha"], n=n, BLOCK=256)

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"out": inputs["x"] * inputs["alpha"]}


@dataclass
class HelloOptions:
    greeting: str = "hello"  # an option, to show how recipes validate them


class HelloSuite:
    name = "hello"
    description = "example third-party suite with one task"

    def __init__(self, options: HelloOptions) -> None:
        self.options = options

    def tasks(self) -> list[Task]:
        return [SCALE]

    def get(self, task_id: str) -> Task:
        if task_id != "scale":
            raise InputError(f"suite 'hello' has no task {task_id!r} (valid: 'scale')")
        return SCALE


@hookimpl
def geak_register_suites(register):  # type: ignore[no-untyped-def]
    register("hello", HelloSuite, options=HelloOptions, description=HelloSuite.description)
