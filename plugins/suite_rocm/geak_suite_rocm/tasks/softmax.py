"""rocm/softmax: y = softmax(x) along each row (online max/sum formulation).

Difficulty 2: a row reduction with a single-pass running max and rescaled sum,
then a normalising pass; rows reach 131072 elements, so it must loop.

Compared with the original: input and output row strides differ in some cases
(the input is a view of a wider tensor), so both stride arguments are
exercised; fp16/bf16 timed shapes are checked, not only timed; the output is
poisoned. The original's correctness shapes that coincide with a timed shape
are merged into it. num_warps follows the block size (the original autotuned
it over 4/8/16).

Bytes per case count one read of x and one write of y (the minimum traffic), not
the original's 3·M·N (which counted an extra pass), so roofline fractions are
against what an ideal kernel must move.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import (
    dtype_of,
    element_size,
    generator,
    launch,
    poisoned,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._rows import block_size, num_warps_for, row_cases

TASK = Task(
    suite="rocm",
    id="softmax",
    instruction=(
        "Write a Triton kernel `softmax_kernel_online` computing a numerically stable softmax "
        "over each row of a 2-D tensor: y[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - "
        "max_r), using an online (single-pass running max and rescaled running sum) reduction "
        "followed by a normalising pass.\n"
        "Signature: softmax_kernel_online(output_ptr, input_ptr, input_row_stride, "
        "output_row_stride, n_rows, n_cols, BLOCK_SIZE) (output first); BLOCK_SIZE is a "
        "tl.constexpr. Row r of the input starts at input_ptr + r * input_row_stride, row r of "
        "the output at output_ptr + r * output_row_stride; columns are contiguous. The two "
        "strides can differ (the input may be a column slice of a wider tensor).\n"
        "Launch: grid = (n_rows,), one program per row; the harness passes BLOCK_SIZE = "
        "min(65536 // element_size, next_power_of_2(n_cols)) and num_warps (4, 8 or 16 by block "
        "size); both may be autotuned instead. When n_cols > BLOCK_SIZE (up to 131072 columns) "
        "the kernel must loop over the row in BLOCK_SIZE chunks; mask the tail; n_cols can be 1.\n"
        "Dtypes: x and y share one dtype (float32, float16 or bfloat16); accumulate in float32. "
        "y is a fresh buffer: write every element of it."
    ),
    entry_points=[
        EntryPoint(
            "softmax_kernel_online",
            params=(
                "output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_rows",
                "n_cols", "BLOCK_SIZE",
            ),
            constexpr=("BLOCK_SIZE",),
        )
    ],
    harness="",
    difficulty=2,
    category="Math",
    tolerances={"float32": [1e-7, 1e-5]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(n_rows, n_cols): correctness float32 (1823,781) with a padded input row stride, (1,1), "
        "(128,1), (1,128), (4096,8192), (359,1), (1,359), (1,89999); timed (2048,2048), "
        "(4096,4096), (8192,8192), (1,32000), (1,131072), (1024,8192), (512,32000) in float16, "
        "bfloat16 and float32."
    ),
)

# (M, N, extra input columns) for correctness-only cases (float32).
CORRECTNESS = [
    (1823, 781, 35), (1, 1, 0), (128, 1, 0), (1, 128, 0), (4096, 8192, 0), (359, 1, 0),
    (1, 359, 0), (1, 89999, 0),
]
TIMED = [(2048, 2048), (4096, 4096), (8192, 8192), (1, 32000), (1, 131072), (1024, 8192), (512, 32000)]
# (M, N, extra input columns, dtype, BLOCK_SIZE override or None): small blocks exercise the loop.
SMALL = [
    (5, 300, 0, "float32", None),
    (3, 300, 7, "float32", 64),
    (3, 1, 0, "float32", None),
    (2, 700, 0, "float16", 128),
    (4, 130, 3, "bfloat16", None),
]


def _case(m: int, n: int, pad: int, dt: str, timed: bool, block: int | None = None) -> Case:
    params: dict[str, Any] = {"M": m, "N": n, "pad": pad, "dtype": dt}
    if block is not None:
        params["BLOCK_SIZE"] = block
    return Case(
        name=f"m{m}_n{n}{f'_pad{pad}' if pad else ''}{f'_b{block}' if block else ''}_{dt}",
        params=params,
        flops=float(9 * m * n),
        bytes=float(2 * m * n * element_size(dt)),  # one read, one write: the minimum traffic
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        return row_cases(mode, SMALL, CORRECTNESS, TIMED, _case)

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        wide = randn((p["M"], p["N"] + p["pad"]), dtype_of(p["dtype"]), device, generator(seed))
        return {"x": wide[:, : p["N"]]}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        x = inputs["x"]
        return {"y": poisoned(x.shape, x.dtype, x.device)}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        x, y = inputs["x"], outputs["y"]
        n_rows, n_cols = x.shape
        block = case.params.get("BLOCK_SIZE") or block_size(n_cols, case.params["dtype"])
        launch(
            module.softmax_kernel_online,
            (n_rows,),
            output_ptr=y,
            input_ptr=x,
            input_row_stride=x.stride(0),
            output_row_stride=y.stride(0),
            n_rows=n_rows,
            n_cols=n_cols,
            BLOCK_SIZE=block,
            num_warps=num_warps_for(block),
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"y": torch.softmax(inputs["x"], dim=1)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"y": torch.softmax(inputs["x"].to(torch.float64), dim=1)}
