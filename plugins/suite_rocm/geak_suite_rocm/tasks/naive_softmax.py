"""rocm/naive_softmax: y = softmax(x) along each row of a 2-D tensor.

Difficulty 2: a row reduction that must loop over columns (rows reach 131072
elements, far beyond one block) and stay numerically safe (subtract the max).

Compared with the original: the timed shapes also cover fp16/bf16 inputs and
outputs are poisoned, so a kernel that skips elements is caught; the fp32
correctness shapes keep the original's near-exact tolerance. The original's
correctness shapes that coincide with a timed shape are merged into it.

Bytes per case count one read of x and one write of y (the minimum traffic), not
the original's 3·M·N (which counted an extra pass), so roofline fractions are
against what an ideal kernel must move.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import dtype_of, element_size, generator, launch, poisoned, randn
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

BLOCK_SIZE = 256

TASK = Task(
    suite="rocm",
    id="naive_softmax",
    instruction=(
        "Write a Triton kernel `softmax_kernel_naive` computing a numerically stable softmax "
        "over each row of a row-major 2-D tensor: y[r, c] = exp(x[r, c] - max_r) / "
        "sum_c' exp(x[r, c'] - max_r).\n"
        "Signature: softmax_kernel_naive(in_ptr, output_ptr, row_stride, n_cols, BLOCK_SIZE) "
        "(input first, output second). `row_stride` is the distance in elements between "
        "consecutive rows and applies to both the input and the output; BLOCK_SIZE is a "
        "tl.constexpr.\n"
        "Launch: grid = (n_rows,), one program per row; the harness passes BLOCK_SIZE=256 "
        "(the kernel may autotune it). Rows are up to 131072 columns long, so the kernel "
        "must loop over the row in BLOCK_SIZE chunks and mask the tail; n_cols can be 1.\n"
        "Dtypes: x and y share one dtype (float32, float16 or bfloat16); accumulate in "
        "float32. y is a fresh buffer: write every element of it."
    ),
    entry_points=[
        EntryPoint(
            "softmax_kernel_naive",
            params=("in_ptr", "output_ptr", "row_stride", "n_cols", "BLOCK_SIZE"),
            constexpr=("BLOCK_SIZE",),
        )
    ],
    harness="",
    difficulty=2,
    category="Math",
    tolerances={"float32": [1e-7, 1e-5]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(n_rows, n_cols): correctness float32 (1823,781), (1,1), (128,1), (1,128), "
        "(4096,8192), (359,1), (1,359), (1,89999); timed (2048,2048), (4096,4096), (8192,8192), "
        "(1,32000), (1,131072), (1024,8192), (512,32000) in float16, bfloat16 and float32."
    ),
)

CORRECTNESS = [(1823, 781), (1, 1), (128, 1), (1, 128), (4096, 8192), (359, 1), (1, 359), (1, 89999)]
TIMED = [(2048, 2048), (4096, 4096), (8192, 8192), (1, 32000), (1, 131072), (1024, 8192), (512, 32000)]
SMALL = [((5, 300), "float32"), ((3, 1), "float32"), ((1, 700), "float16"), ((4, 130), "bfloat16")]


def _case(m: int, n: int, dt: str, timed: bool) -> Case:
    return Case(
        name=f"m{m}_n{n}_{dt}",
        params={"M": m, "N": n, "dtype": dt},
        flops=float(9 * m * n),
        bytes=float(2 * m * n * element_size(dt)),  # one read, one write: the minimum traffic
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(m, n, dt, False) for (m, n), dt in SMALL]
        cases = [_case(m, n, "float32", False) for m, n in CORRECTNESS]
        cases += [
            _case(m, n, dt, True) for m, n in TIMED for dt in ("float16", "bfloat16", "float32")
        ]
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        g = generator(seed)
        shape = (case.params["M"], case.params["N"])
        return {"x": randn(shape, dtype_of(case.params["dtype"]), device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        x = inputs["x"]
        return {"y": poisoned(x.shape, x.dtype, x.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        x, y = inputs["x"], outputs["y"]
        launch(
            module.softmax_kernel_naive,
            (x.shape[0],),
            in_ptr=x,
            output_ptr=y,
            row_stride=x.stride(0),
            n_cols=x.shape[1],
            BLOCK_SIZE=BLOCK_SIZE,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"y": torch.softmax(inputs["x"], dim=1)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"y": torch.softmax(inputs["x"].to(torch.float64), dim=1)}
