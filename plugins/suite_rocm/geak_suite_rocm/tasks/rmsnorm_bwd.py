"""rocm/rmsnorm_bwd: RMSNorm backward, dx and per-row dgamma from x, gamma, rsigma and dy.

Difficulty 3: a persistent row loop with a row reduction feeding an
elementwise pass, a blocked path for long rows, zero-centred gamma and mixed
dtypes (x and dy may differ).

Compared with the original: the timed call is the candidate's backward
kernel (the original timed the harness's forward), so bytes and flops
describe the backward (reads x, dy, gamma, rsigma; writes dx and the fp32
per-row dg); gamma is random instead of all ones; the blocked path, never
reached by the original's correctness cases, is checked (a small BLOCK_SIZE
in the interpreter, long rows on the GPU); dy has its own row stride in some
cases; rsigma is an input computed by the harness (the original obtained it
from its forward kernel); outputs are poisoned. The row-sum of dg into dgamma
was a harness kernel in the original and is not part of the task: the per-row
dg buffer is compared directly. NUM_PRGMS = min(n_rows, SM count) (4 under the
CPU interpreter). The original's 40 correctness and 42 perf cases are reduced
to 7 correctness and 7 timed cases.
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

from geak_suite_rocm.tasks._rows import persistent_row_args

PARAMS = (
    "grad_output_ptr", "input_ptr", "g_ptr", "rsigma_ptr", "dx_ptr", "dg_ptr", "input_row_stride",
    "output_row_stride", "n_rows", "n_cols", "ZERO_CENTERED_GAMMA", "BLOCK_SIZE", "USE_BLOCKED",
    "NUM_PRGMS",
)
FWD_EPS = 1e-6

TASK = Task(
    suite="rocm",
    id="rmsnorm_bwd",
    instruction=(
        "Write a Triton kernel `rms_bwd_kernel` for the RMSNorm backward pass. The forward was "
        "y[r, c] = x[r, c] * rsigma[r] * gamma[c] with gamma = g (or g + 1 when "
        "ZERO_CENTERED_GAMMA) and rsigma[r] = 1 / sqrt(mean_c x[r, c]^2 + eps) (given). With "
        "dy = grad_output, compute for every row r:\n"
        "  dx[r, c] = rsigma[r] * dy[r, c] * gamma[c] - rsigma[r]^3 * x[r, c] * "
        "(sum_c' dy[r, c'] * gamma[c'] * x[r, c']) / n_cols\n"
        "  dg[r, c] = dy[r, c] * x[r, c] * rsigma[r]   (per-row dgamma, float32)\n"
        "Signature: rms_bwd_kernel(" + ", ".join(PARAMS) + "); ZERO_CENTERED_GAMMA, BLOCK_SIZE, "
        "USE_BLOCKED and NUM_PRGMS are tl.constexpr. Rows of x, dx and dg are input_row_stride "
        "elements apart, rows of grad_output output_row_stride elements apart (they can "
        "differ); columns are contiguous. g is a contiguous (n_cols,) vector, rsigma a float32 "
        "(n_rows,) vector, dg a float32 (n_rows, n_cols) buffer.\n"
        "Launch: persistent grid = (NUM_PRGMS,) with NUM_PRGMS = min(n_rows, number of SMs/CUs); "
        "program p handles rows p, p + NUM_PRGMS, ... The harness passes BLOCK_SIZE = "
        "min(65536 // element_size(x), next_power_of_2(n_cols)), USE_BLOCKED = (n_cols > "
        "BLOCK_SIZE) (loop over the row in BLOCK_SIZE chunks when set) and num_warps=8; all "
        "arguments by keyword.\n"
        "Dtypes: x, g and dx share the input dtype, grad_output has the output dtype; (input, "
        "output) is (fp16, fp16), (fp16, bf16), (bf16, fp16), (bf16, bf16) or (fp32, fp32). "
        "Compute in float32. dx and dg are fresh buffers: write every element."
    ),
    entry_points=[
        EntryPoint(
            "rms_bwd_kernel",
            params=PARAMS,
            constexpr=("ZERO_CENTERED_GAMMA", "BLOCK_SIZE", "USE_BLOCKED", "NUM_PRGMS"),
        )
    ],
    harness="",
    difficulty=3,
    category="Normalization",
    tolerances={"float16": [1e-3, 1e-2], "bfloat16": [1e-3, 1e-2], "float32": [1e-3, 1e-2]},
    outliers=OutlierSpec(inputs=("x", "grad_output")),
    shapes_note=(
        "(n_rows, n_cols) input/output dtype [gamma mode]: correctness (1,4), (2,10), "
        "(256,4096), (1,31744), (873,1245) x2 over all fp16/bf16 pairs and both gamma modes, "
        "(1,131072) fp16 (blocked); timed (256,4096), (2048,2048), (4096,8192), (8192,8192), "
        "(1,31744) (fp32: blocked), (1,131072) (blocked), (512,10240) in fp16, bf16 or fp32. "
        "x, dy ~ N(0,1), g ~ U(0,1)."
    ),
)

# (M, N, input dtype, output dtype, zero-centred gamma, extra dy columns, timed)
FULL = [
    (1, 4, "float16", "float16", False, 0, False),
    (2, 10, "bfloat16", "float16", True, 0, False),
    (256, 4096, "float16", "bfloat16", False, 0, False),
    (1, 31744, "bfloat16", "bfloat16", True, 0, False),
    (873, 1245, "float16", "float16", True, 19, False),
    (873, 1245, "bfloat16", "float16", False, 0, False),
    (1, 131072, "float16", "float16", False, 0, False),
    (256, 4096, "float16", "float16", False, 0, True),
    (2048, 2048, "bfloat16", "bfloat16", True, 0, True),
    (4096, 8192, "float32", "float32", False, 0, True),
    (8192, 8192, "float16", "float16", True, 0, True),
    (1, 31744, "float32", "float32", False, 0, True),
    (1, 131072, "bfloat16", "bfloat16", True, 0, True),
    (512, 10240, "float16", "float16", False, 0, True),
]
# (M, N, input dtype, output dtype, zero-centred gamma, extra dy columns, BLOCK_SIZE override)
SMALL = [
    (7, 40, "float16", "float16", False, 0, None),
    (5, 100, "bfloat16", "float16", True, 3, 32),
    (2, 10, "float32", "float32", True, 0, None),
    (1, 4, "float16", "bfloat16", False, 0, None),
    (6, 70, "float32", "float32", False, 5, 16),
]


@functools.cache
def _case(m, n, din, dout, zcg, pad, timed, block=None) -> Case:
    es_in, es_out = element_size(din), element_size(dout)
    params: dict[str, Any] = {
        "M": m, "N": n, "in_dtype": din, "out_dtype": dout, "zcg": zcg, "pad": pad,
    }
    if block is not None:
        params["BLOCK_SIZE"] = block
    name = f"m{m}_n{n}_{din}_dy_{dout}{'_zcg' if zcg else ''}"
    name += f"{f'_pad{pad}' if pad else ''}{f'_b{block}' if block else ''}"
    return Case(
        name=name,
        params=params,
        flops=float(m * (8 * n + 5) + (m * n if zcg else 0)),
        bytes=float(m * n * (2 * es_in + es_out + 4) + n * es_in + 4 * m),
        dtype=din,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(m, n, i, o, z, pad, False, b) for m, n, i, o, z, pad, b in SMALL]
        return [_case(*spec) for spec in FULL]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        p = case.params
        g = generator(seed)
        m, n = p["M"], p["N"]
        x = randn((m, n), dtype_of(p["in_dtype"]), device, g)
        dy_wide = randn((m, n + p["pad"]), dtype_of(p["out_dtype"]), device, g)
        x32 = x.to(torch.float32)
        rsigma = torch.rsqrt((x32 * x32).mean(dim=1) + FWD_EPS)
        return {
            "x": x,
            "g": rand((n,), dtype_of(p["in_dtype"]), device, g),
            "rsigma": rsigma,
            "grad_output": dy_wide[:, :n],
        }

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        return {
            "dx": poisoned(x.shape, x.dtype, x.device),
            "dg": poisoned(x.shape, torch.float32, x.device),
        }

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        x, dy = inputs["x"], inputs["grad_output"]
        rows = persistent_row_args(case, x)
        launch(
            module.rms_bwd_kernel,
            (rows["NUM_PRGMS"],),
            grad_output_ptr=dy,
            input_ptr=x,
            g_ptr=inputs["g"],
            rsigma_ptr=inputs["rsigma"],
            dx_ptr=outputs["dx"],
            dg_ptr=outputs["dg"],
            input_row_stride=x.stride(0),
            output_row_stride=dy.stride(0),
            **rows,
            num_warps=8,
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"].to(torch.float32)
        dy = inputs["grad_output"].to(torch.float32)
        r = inputs["rsigma"][:, None]
        gamma = inputs["g"].to(torch.float32) + (1.0 if case.params["zcg"] else 0.0)
        row_sum = (dy * gamma * x).sum(dim=1, keepdim=True)
        dx = r * dy * gamma - r**3 * x * row_sum / x.shape[1]
        return {"dx": dx.to(inputs["x"].dtype), "dg": dy * x * r}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        x = inputs["x"].to(torch.float64)
        dy = inputs["grad_output"].to(torch.float64)
        r = inputs["rsigma"].to(torch.float64)[:, None]
        gamma = inputs["g"].to(torch.float64) + (1.0 if case.params["zcg"] else 0.0)
        row_sum = (dy * gamma * x).sum(dim=1, keepdim=True)
        dx = r * dy * gamma - r**3 * x * row_sum / x.shape[1]
        return {"dx": dx, "dg": dy * x * r}
