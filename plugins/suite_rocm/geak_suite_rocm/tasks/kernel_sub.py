"""rocm/test_kernel_sub: o = a - 777 * b over N contiguous elements, one program.

Difficulty 1: a single unmasked elementwise expression over a power-of-two range.
Fixes: the original only checked that the kernel compiles; here it is launched on the shapes it
timed (N = 2^10..2^16, fp32 and fp16) and every output element is compared.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import dtype_of, element_size, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

TASK = Task(
    suite="rocm",
    id="test_kernel_sub",
    instruction=(
        "Write a Triton kernel `kernel_sub(a, b, o, N: tl.constexpr)` computing "
        "o[i] = a[i] - 777 * b[i] for i = 0..N-1. a, b and o are contiguous 1-D tensors of "
        "exactly N elements, all of the same dtype (float32 or float16); N is a power of two "
        "(32 to 65536) passed by keyword as a constexpr, so no masking is needed. The harness "
        "launches grid (1,) with num_warps=4: one program covers all N elements (loop inside "
        "the kernel if that helps). Results are compared with the exact value rounded to the "
        "output dtype within the listed tolerances."
    ),
    entry_points=[EntryPoint("kernel_sub", params=("a", "b", "o", "N"), constexpr=("N",))],
    harness="",
    difficulty=1,
    category="Math",
    # fp16: room for computing in fp16 (777 * b rounded before the subtraction), no more
    tolerances={"float16": [5e-3, 2e-3]},
    outliers=OutlierSpec(inputs=("a", "b")),
    shapes_note="N = 32 (fp32), 1024, 16384, 65536 (fp32 and fp16); 1-D contiguous.",
)


def _case(n: int, dt: str, timed: bool) -> Case:
    return Case(
        name=f"n{n}_{dt}",
        params={"N": n, "dtype": dt, "num_warps": 4},
        flops=float(2 * n),
        bytes=float(3 * n * element_size(dt)),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(32, "float32", False), _case(256, "float16", False)]
        timed = [_case(n, dt, True) for n in (1024, 16384, 65536) for dt in ("float32", "float16")]
        return [_case(32, "float32", False), *timed]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        n, dtype = case.params["N"], dtype_of(case.params["dtype"])
        return {"a": randn((n,), dtype, device, g), "b": randn((n,), dtype, device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a = inputs["a"]
        return {"o": poisoned(a.shape, a.dtype, a.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        launch(
            module.kernel_sub,
            (1,),
            a=inputs["a"],
            b=inputs["b"],
            o=outputs["o"],
            N=case.params["N"],
            num_warps=case.params["num_warps"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"o": torch.sub(inputs["a"], inputs["b"], alpha=777.0)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a, b = inputs["a"].double(), inputs["b"].double()
        return {"o": (a - 777.0 * b).to(inputs["a"].dtype)}
