"""Dequantise a per-row int8 matrix back to floating point, x = q * scale[row],
writing fp16, bf16 or fp32 as the output buffer dictates. A 2-D grid of
(row tile, column tile) programs loads each tile's row scales once as a
vector and broadcasts them across the columns; the int8 values are widened
to float32 before the multiply so the result is exact up to the final
rounding to the output dtype."""

import torch
import triton
import triton.language as tl


@triton.jit
def dequantize_rows_kernel(
    q_ptr,
    scale_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_q,
    stride_out,
    BR: tl.constexpr,
    BC: tl.constexpr,
):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    ok = (r[:, None] < n_rows) & (c[None, :] < n_cols)
    q = tl.load(q_ptr + r[:, None] * stride_q + c[None, :], mask=ok, other=0)
    s = tl.load(scale_ptr + r, mask=r < n_rows, other=0.0)
    x = q.to(tl.float32) * s[:, None]
    tl.store(
        out_ptr + r[:, None] * stride_out + c[None, :], x.to(out_ptr.dtype.element_ty), mask=ok
    )


def dequantize_rows(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32):
    rows, cols = q.shape
    out = torch.empty((rows, cols), dtype=dtype)
    grid = (triton.cdiv(rows, 8), triton.cdiv(cols, 32))
    dequantize_rows_kernel[grid](q, scale, out, rows, cols, q.stride(0), out.stride(0), BR=8, BC=32)
    return out
