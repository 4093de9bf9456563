"""Flip (reverse) every row of a matrix along its last dimension, like
torch.flip(x, dims=(1,)): out[r, j] = x[r, n_cols - 1 - j], by loading
through reversed offsets rather than permuting registers with tl.flip: the
program computes the mirrored column index and lets the load gather in
reverse. Masking on the mirrored index handles any row length; the same
trick reverses a 1-D range or a slice (out[i] = x[start + n - 1 - i])."""

import torch
import triton
import triton.language as tl


@triton.jit
def flip_rows_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = j < n_cols
    mirrored = n_cols - 1 - j
    v = tl.load(x_ptr + row * stride_x + mirrored, mask=inside)
    tl.store(out_ptr + row * stride_out + j, v, mask=inside)


def flip_rows(x: torch.Tensor):
    rows, cols = x.shape
    out = torch.empty_like(x)
    flip_rows_kernel[(rows, triton.cdiv(cols, 64))](
        x, out, cols, x.stride(0), out.stride(0), BLOCK=64
    )
    return out
