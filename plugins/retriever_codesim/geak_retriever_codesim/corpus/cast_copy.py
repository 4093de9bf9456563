"""Strided 2-D copy with dtype conversion: reads a possibly non-contiguous
(for example transposed) matrix through its two strides and writes a
contiguous matrix of another dtype, converting with .to(dst.dtype.element_ty)
so the same kernel serves fp32->fp16, fp16->fp32, fp32->bf16 and so on.
Useful as the model for layout changes (contiguous(), .to()) done in one
pass."""

import torch
import triton
import triton.language as tl


@triton.jit
def strided_cast_kernel(
    src, dst, n_rows, n_cols, s_row, s_col, TILE_R: tl.constexpr, TILE_C: tl.constexpr
):
    r = tl.program_id(0) * TILE_R + tl.arange(0, TILE_R)[:, None]
    c = tl.program_id(1) * TILE_C + tl.arange(0, TILE_C)[None, :]
    inside = (r < n_rows) & (c < n_cols)
    vals = tl.load(src + r * s_row + c * s_col, mask=inside)
    tl.store(dst + r * n_cols + c, vals.to(dst.dtype.element_ty), mask=inside)


def strided_cast(x: torch.Tensor, dtype: torch.dtype):
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=dtype)
    grid = (triton.cdiv(n_rows, 16), triton.cdiv(n_cols, 16))
    strided_cast_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), x.stride(1), TILE_R=16, TILE_C=16
    )
    return out
