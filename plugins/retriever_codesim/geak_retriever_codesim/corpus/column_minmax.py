"""Minimum and maximum of every column of a tall matrix (the ranges a
per-channel quantiser or min-max scaler needs): each program owns BLOCK_C
columns and walks down the rows in BLOCK_R steps, keeping running tiles of
minima and maxima with tl.minimum / tl.maximum, then reduces them along
axis 0 once at the end. Masked lanes are loaded as +inf for the minimum and
-inf for the maximum so they never win. The row stride is an argument, so a
column slice of a larger matrix works too."""

import torch
import triton
import triton.language as tl


@triton.jit
def column_minmax_kernel(
    x_ptr, lo_ptr, hi_ptr, n_rows, n_cols, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = cols < n_cols
    lo = tl.full((BLOCK_R, BLOCK_C), float("inf"), tl.float32)
    hi = tl.full((BLOCK_R, BLOCK_C), float("-inf"), tl.float32)
    for r0 in range(0, n_rows, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        ok = (rows[:, None] < n_rows) & col_ok[None, :]
        ptrs = x_ptr + rows[:, None] * stride_r + cols[None, :]
        v = tl.load(ptrs, mask=ok, other=0.0).to(tl.float32)
        lo = tl.minimum(lo, tl.where(ok, v, float("inf")))
        hi = tl.maximum(hi, tl.where(ok, v, float("-inf")))
    tl.store(lo_ptr + cols, tl.min(lo, axis=0), mask=col_ok)
    tl.store(hi_ptr + cols, tl.max(hi, axis=0), mask=col_ok)


def column_minmax(x: torch.Tensor):
    rows, cols = x.shape
    lo = torch.empty(cols, dtype=torch.float32)
    hi = torch.empty(cols, dtype=torch.float32)
    column_minmax_kernel[(triton.cdiv(cols, 32),)](
        x, lo, hi, rows, cols, x.stride(0), BLOCK_R=16, BLOCK_C=32
    )
    return lo, hi
