"""RMSNorm backward given the saved inverse RMS r of each row: with
y = x * r * g, the input gradient is dx = r * (dy * g - x * r^2 * mean(dy *
g * x)) and the weight gradient is dg = sum over rows of dy * x * r. The
first kernel computes dx per row and writes the per-row products dy * x * r
to a float32 scratch matrix; a second kernel sums that scratch over rows,
one column block per program, so no atomics are needed."""

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_bwd_rows_kernel(
    dy_ptr, x_ptr, g_ptr, inv_rms_ptr, dx_ptr, dg_part_ptr, n_cols, stride, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    dy = tl.load(dy_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    r = tl.load(inv_rms_ptr + row)
    dyg = dy * g
    proj = tl.sum(dyg * x, axis=0) / n_cols
    dx = r * (dyg - x * r * r * proj)
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)
    tl.store(dg_part_ptr + row * n_cols + cols, dy * x * r, mask=inside)


@triton.jit
def column_sum_kernel(
    part_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), tl.float32)
    for r0 in range(0, n_rows, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        ok = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.sum(
            tl.load(part_ptr + rows[:, None] * n_cols + cols[None, :], mask=ok, other=0.0), axis=0
        )
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


def rms_norm_bwd(dy: torch.Tensor, x: torch.Tensor, g: torch.Tensor, inv_rms: torch.Tensor):
    rows, cols = x.shape
    dx = torch.empty_like(x)
    parts = torch.empty((rows, cols), dtype=torch.float32)
    dg = torch.empty(cols, dtype=g.dtype)
    rms_norm_bwd_rows_kernel[(rows,)](
        dy, x, g, inv_rms, dx, parts, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols)
    )
    column_sum_kernel[(triton.cdiv(cols, 16),)](parts, dg, rows, cols, BLOCK_R=8, BLOCK_C=16)
    return dx, dg
