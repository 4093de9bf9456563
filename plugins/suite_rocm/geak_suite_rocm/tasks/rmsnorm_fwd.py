"""rocm/rmsnorm_fwd: RMSNorm forward y = x * rsqrt(mean(x^2) + eps) * gamma, plus rsigma per row.

Difficulty 3: a persistent row loop (grid = number of SMs, not rows), a
blocked path for rows longer than one block, zero-centred gamma, and
different input and output dtypes.

Compared with the original: gamma is random instead of all ones (so a kernel
that ignores or misindexes it is caught), the oracle keeps epsilon, the
timed fp32 and zero-centred configurations are checked, the blocked path is
checked at a size the interpreter can run too (a small BLOCK_SIZE), and
outputs are poisoned. The original's blocked case (8192, 65536) becomes
(1024, 65536): the same blocked path at an eighth of the input size.
NUM_PRGMS = min(n_rows, SM count) as in the original (4 under the CPU
interpreter, so the row loop is exercised); num_warps follows the block size
(the original autotuned it). The original's 56 correctness and 42 perf cases
are reduced to 8 correctness and 7 timed cases covering every dtype pair,
both gamma modes and the blocked path.
"""

from __future__ import annotations

import functools
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

from geak_suite_rocm.tasks._rows import num_warps_for, persistent_row_args

PARAMS = (
    "output_ptr", "input_ptr", "g_ptr", "rsigma_ptr", "input_row_stride", "output_row_stride",
    "n_rows", "n_cols", "epsilon", "ZERO_CENTERED_GAMMA", "BLOCK_SIZE", "USE_BLOCKED", "NUM_PRGMS",
)

TASK = Task(
    suite="rocm",
    id="rmsnorm_fwd",
    instruction=(
        "Write a Triton kernel `rms_kernel` for the RMSNorm forward pass over the rows of x "
        "(n_rows, n_cols): rsigma_r = 1 / sqrt(sum_c x[r, c]^2 / n_cols + epsilon), y[r, c] = "
        "x[r, c] * rsigma_r * gamma[c], where gamma = g, or g + 1 when ZERO_CENTERED_GAMMA.\n"
        "Signature: rms_kernel(" + ", ".join(PARAMS) + ") (output first); ZERO_CENTERED_GAMMA, "
        "BLOCK_SIZE, USE_BLOCKED and NUM_PRGMS are tl.constexpr, epsilon a runtime float "
        "(1e-6 in correctness cases, 1e-5 in timed ones). Row r of x starts at input_ptr + r * "
        "input_row_stride, row r of y at output_ptr + r * output_row_stride; g is a contiguous "
        "(n_cols,) vector; rsigma is a float32 (n_rows,) vector that must be written too.\n"
        "Launch: persistent grid = (NUM_PRGMS,) with NUM_PRGMS = min(n_rows, number of SMs/CUs); "
        "program p handles rows p, p + NUM_PRGMS, p + 2 * NUM_PRGMS, ... The harness passes "
        "BLOCK_SIZE = min(65536 // element_size(x), next_power_of_2(n_cols)) and USE_BLOCKED = "
        "(n_cols > BLOCK_SIZE): when set, loop over the row in BLOCK_SIZE chunks. All arguments "
        "by keyword, plus num_warps (4, 8 or 16 by block size; may be autotuned instead).\n"
        "Dtypes: x and g share the input dtype, y has the output dtype; (input, output) is "
        "(fp16, fp16), (fp16, bf16), (bf16, fp16), (bf16, bf16) or (fp32, fp32). Compute in "
        "float32. Outputs are fresh buffers: write every element."
    ),
    entry_points=[
        EntryPoint(
            "rms_kernel",
            params=PARAMS,
            constexpr=("ZERO_CENTERED_GAMMA", "BLOCK_SIZE", "USE_BLOCKED", "NUM_PRGMS"),
        )
    ],
    harness="",
    difficulty=3,
    category="Normalization",
    tolerances={"float16": [1e-3, 1e-2], "bfloat16": [1e-3, 1e-2], "float32": [1e-4, 1e-4]},
    outliers=OutlierSpec(inputs=("x",)),
    shapes_note=(
        "(n_rows, n_cols) input->output dtype [gamma mode]: correctness (1,4), (2,10), "
        "(873,1245) x2, (256,4096), (1,31744), (1024,65536) (blocked), (4096,8192) over all "
        "fp16/bf16 pairs and both gamma modes; timed (256,4096), (2048,2048), (4096,8192), "
        "(8192,8192), (1,31744), (1,131072), (512,10240) in fp16, bf16 or fp32. x ~ N(0,1), "
        "g ~ U(0,1)."
    ),
)

# (M, N, input dtype, output dtype, zero-centred gamma, timed)
FULL = [
    (1, 4, "float16", "float16", False, False),
    (2, 10, "bfloat16", "float16", True, False),
    (873, 1245, "float16", "bfloat16", False, False),
    (873, 1245, "bfloat16", "bfloat16", True, False),
    (256, 4096, "bfloat16", "float16", False, False),
    (1, 31744, "float16", "float16", True, False),
    (1024, 65536, "float16", "float16", False, False),
    (4096, 8192, "bfloat16", "bfloat16", False, False),
    (256, 4096, "float16", "float16", False, True),
    (2048, 2048, "bfloat16", "bfloat16", True, True),
    (4096, 8192, "float32", "float32", False, True),
    (8192, 8192, "float16", "float16", True, True),
    (1, 31744, "bfloat16", "bfloat16", False, True),
    (1, 131072, "float32", "float32", True, True),
    (512, 10240, "float16", "float16", False, True),
]
# (M, N, input dtype, output dtype, zero-centred gamma, BLOCK_SIZE override or None)
SMALL = [
    (7, 40, "float16", "float16", False, None),
    (5, 100, "bfloat16", "float16", True, 32),
    (2, 10, "float32", "float32", True, None),
    (1, 4, "float16", "bfloat16", False, None),
    (6, 70, "float32", "float32", False, 16),
]


@functools.cache
def _case(m, n, din, dout, zcg, timed, block=None) -> Case:
    es_in, es_out = element_size(din), element_size(dout)
    params: dict[str, Any] = {
        "M": m, "N": n, "in_dtype": din, "out_dtype": dout, "zcg": zcg,
        "eps": 1e-5 if timed else 1e-6,
    }
    if block is not None:
        params["BLOCK_SIZE"] = block
    return Case(
        name=f"m{m}_n{n}_{din}_to_{dout}{'_zcg' if zcg else ''}{f'_b{block}' if block else ''}",
        params=params,
        flops=float(m * (4 * n + 5) + (m * n if zcg else 0)),
        bytes=float(m * n * (es_in + es_out) + n * es_in + 4 * m),
        dtype=din,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(m, n, i, o, z, False, b) for m, n, i, o, z, b in SMALL]
        return [_case(*spec) for spec in FULL]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        p = case.params
        g = generator(seed)
        dtype = dtype_of(p["in_dtype"])
        return {
            "x": randn((p["M"], p["N"]), dtype, device, g),
            "g": rand((p["N"],), dtype, device, g),
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        return {
            "y": poisoned(x.shape, dtype_of(case.params["out_dtype"]), x.device),
            "rsigma": poisoned((x.shape[0],), torch.float32, x.device),
        }

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        x, y = inputs["x"], outputs["y"]
        rows = persistent_row_args(case, x)
        launch(
            module.rms_kernel,
            (rows["NUM_PRGMS"],),
            output_ptr=y,
            input_ptr=x,
            g_ptr=inputs["g"],
            rsigma_ptr=outputs["rsigma"],
            input_row_stride=x.stride(0),
            output_row_stride=y.stride(0),
            epsilon=case.params["eps"],
            **rows,
            num_warps=num_warps_for(rows["BLOCK_SIZE"]),
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"].to(torch.float32)
        gamma = inputs["g"].to(torch.float32) + (1.0 if case.params["zcg"] else 0.0)
        rsigma = torch.rsqrt((x * x).mean(dim=1) + case.params["eps"])
        y = x * rsigma[:, None] * gamma
        return {"y": y.to(dtype_of(case.params["out_dtype"])), "rsigma": rsigma}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"].to(torch.float64)
        gamma = inputs["g"].to(torch.float64) + (1.0 if case.params["zcg"] else 0.0)
        rsigma = 1.0 / torch.sqrt((x * x).mean(dim=1) + case.params["eps"])
        return {"y": x * rsigma[:, None] * gamma, "rsigma": rsigma}
