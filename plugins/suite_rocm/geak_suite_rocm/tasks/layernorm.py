"""rocm/layernorm: row-wise LayerNorm forward y = (x - mean) * rstd * w + b, plus mean and rstd.

Difficulty 2: two reductions per row (mean, variance) and an affine pass; rows
up to 131072 elements force a looped, numerically careful implementation.

Compared with the original, which compared nothing (no assert; only GEAK's
gold file): y, mean and rstd are all checked against a float64 oracle with
real tolerances, the input and output row strides differ in some cases, and
every timed shape (fp16, bf16, fp32) is checked too. The original's backward
(harness kernels fed by the candidate's mean/rstd, never checked) is not part
of the task. num_warps follows the block size (the original autotuned it).
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
    rand,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Task

from geak_suite_rocm.tasks._rows import block_size, num_warps_for, row_cases

EPS = 1e-5

TASK = Task(
    suite="rocm",
    id="layernorm",
    instruction=(
        "Write a Triton kernel `layernorm_kernel` for the LayerNorm forward pass over the last "
        "dimension of a 2-D tensor x (n_rows, n_cols): mean_r = sum_c x[r, c] / n_cols, var_r = "
        "sum_c (x[r, c] - mean_r)^2 / n_cols (biased), rstd_r = 1 / sqrt(var_r + eps), "
        "y[r, c] = (x[r, c] - mean_r) * rstd_r * w[c] + b[c].\n"
        "Signature: layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, "
        "x_row_stride, y_row_stride, n_rows, n_cols, eps, BLOCK_SIZE); BLOCK_SIZE is a "
        "tl.constexpr, eps a runtime float (1e-5). Row r of x starts at x_ptr + r * x_row_stride "
        "and row r of y at y_ptr + r * y_row_stride (the strides can differ); columns are "
        "contiguous. w and b are contiguous (n_cols,) vectors; mean and rstd are float32 (n_rows,) "
        "vectors that must be written too.\n"
        "Launch: grid = (n_rows,), one program per row; the harness passes BLOCK_SIZE = "
        "min(65536 // element_size, next_power_of_2(n_cols)) and num_warps (4, 8 or 16 by block "
        "size); both may be autotuned instead. When n_cols > BLOCK_SIZE (up to 131072) loop over "
        "the row in BLOCK_SIZE chunks; mask the tail; n_cols can be 1 (then var = 0).\n"
        "Dtypes: x, w, b and y share one dtype (float32, float16 or bfloat16); compute in float32. "
        "All outputs are fresh buffers: write every element."
    ),
    entry_points=[
        EntryPoint(
            "layernorm_kernel",
            params=(
                "x_ptr", "y_ptr", "w_ptr", "b_ptr", "mean_ptr", "rstd_ptr", "x_row_stride",
                "y_row_stride", "n_rows", "n_cols", "eps", "BLOCK_SIZE",
            ),
            constexpr=("BLOCK_SIZE",),
        )
    ],
    harness="",
    difficulty=2,
    category="Normalization",
    tolerances={"float32": [1e-4, 1e-4]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(n_rows, n_cols): correctness float32 (2,128) and (359,1) with padded input rows, "
        "(1,4), (128,2), (1,128), (4096,8192), (1,359); timed (1823,781), (2048,2048), "
        "(8192,8192), (4096,10240), (1,131072), (1,89999), (128,2048), (512,4096) in float16, "
        "bfloat16 and float32. x ~ N(0,1), w, b ~ U(0,1), eps = 1e-5."
    ),
)

# (M, N, extra input columns) for correctness-only cases (float32).
CORRECTNESS = [(2, 128, 5), (1, 4, 0), (128, 2, 0), (1, 128, 0), (4096, 8192, 0), (359, 1, 3), (1, 359, 0)]
TIMED = [
    (1823, 781), (2048, 2048), (8192, 8192), (4096, 10240), (1, 131072), (1, 89999), (128, 2048),
    (512, 4096),
]
# (M, N, extra input columns, dtype, BLOCK_SIZE override or None): small blocks exercise the loop.
SMALL = [
    (5, 300, 0, "float32", None),
    (3, 300, 7, "float32", 64),
    (4, 1, 0, "float32", None),
    (2, 700, 0, "float16", 128),
    (3, 130, 2, "bfloat16", None),
]


def _case(m: int, n: int, pad: int, dt: str, timed: bool, block: int | None = None) -> Case:
    es = element_size(dt)
    params: dict[str, Any] = {"M": m, "N": n, "pad": pad, "dtype": dt}
    if block is not None:
        params["BLOCK_SIZE"] = block
    return Case(
        name=f"m{m}_n{n}{f'_pad{pad}' if pad else ''}{f'_b{block}' if block else ''}_{dt}",
        params=params,
        flops=float(m * (8 * n + 5)),
        bytes=float((2 * m * n + 2 * n) * es + 8 * m),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        return row_cases(mode, SMALL, CORRECTNESS, TIMED, _case)

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        g = generator(seed)
        dtype = dtype_of(p["dtype"])
        wide = randn((p["M"], p["N"] + p["pad"]), dtype, device, g)
        return {
            "x": wide[:, : p["N"]],
            "w": rand((p["N"],), dtype, device, g),
            "b": rand((p["N"],), dtype, device, g),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        return {
            "y": poisoned(x.shape, x.dtype, x.device),
            "mean": poisoned((x.shape[0],), torch.float32, x.device),
            "rstd": poisoned((x.shape[0],), torch.float32, x.device),
        }

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        x, y = inputs["x"], outputs["y"]
        n_rows, n_cols = x.shape
        block = case.params.get("BLOCK_SIZE") or block_size(n_cols, case.params["dtype"])
        launch(
            module.layernorm_kernel,
            (n_rows,),
            x_ptr=x,
            y_ptr=y,
            w_ptr=inputs["w"],
            b_ptr=inputs["b"],
            mean_ptr=outputs["mean"],
            rstd_ptr=outputs["rstd"],
            x_row_stride=x.stride(0),
            y_row_stride=y.stride(0),
            n_rows=n_rows,
            n_cols=n_cols,
            eps=EPS,
            BLOCK_SIZE=block,
            num_warps=num_warps_for(block),
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        y, mean, rstd = torch.native_layer_norm(x, [x.shape[1]], inputs["w"], inputs["b"], EPS)
        if mean.dtype != torch.float32:  # the CPU keeps half-precision statistics; GPUs use float32
            _, mean, rstd = torch.native_layer_norm(x.float(), [x.shape[1]], None, None, EPS)
        return {"y": y, "mean": mean.reshape(-1), "rstd": rstd.reshape(-1)}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"].to(torch.float64)
        mean = x.mean(dim=1)
        var = ((x - mean[:, None]) ** 2).mean(dim=1)
        rstd = 1.0 / torch.sqrt(var + EPS)
        y = (x - mean[:, None]) * rstd[:, None] * inputs["w"].to(torch.float64) + inputs["b"].to(
            torch.float64
        )
        return {"y": y, "mean": mean, "rstd": rstd}
