"""RMSNorm forward, y = x * rsqrt(mean(x^2) + eps) * g, as a persistent kernel:
the grid has a fixed number of programs (for example the number of compute
units) and each loops over rows row = pid, pid + n_programs, ... . A row
that fits in one block is loaded once and kept in registers; the inverse RMS
of every row is also stored (float32) for the backward pass. An optional
ZERO_CENTERED flag applies the weight as (g + 1)."""

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_fwd_kernel(
    x_ptr,
    g_ptr,
    y_ptr,
    inv_rms_ptr,
    n_rows,
    n_cols,
    stride,
    eps,
    n_programs,
    ZERO_CENTERED: tl.constexpr,
    BLOCK: tl.constexpr,
):
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    g = tl.load(g_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    if ZERO_CENTERED:
        g = g + 1.0
    for row in range(tl.program_id(0), n_rows, n_programs):
        x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
        inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        tl.store(inv_rms_ptr + row, inv_rms)
        y = x * inv_rms * g
        tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


def rms_norm_fwd(
    x: torch.Tensor,
    g: torch.Tensor,
    eps: float = 1e-6,
    zero_centered: bool = False,
    programs: int = 3,
):
    rows, cols = x.shape
    y = torch.empty_like(x)
    inv_rms = torch.empty(rows, dtype=torch.float32)
    n_programs = min(programs, rows)
    rms_norm_fwd_kernel[(n_programs,)](
        x,
        g,
        y,
        inv_rms,
        rows,
        cols,
        x.stride(0),
        eps,
        n_programs,
        ZERO_CENTERED=zero_centered,
        BLOCK=triton.next_power_of_2(cols),
    )
    return y, inv_rms
