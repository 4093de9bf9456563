"""Inclusive prefix sum (cumulative sum, scan) along each row, for rows
longer than one block: tl.cumsum scans each chunk in registers and a scalar
carry holding the running total of all previous chunks is added before the
store, then advanced by the chunk's tl.sum. Accumulates in float32;
masked-out lanes load 0 so they do not disturb the carry."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_cumsum_kernel(x_ptr, y_ptr, n_cols, stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for c0 in range(0, n_cols, CHUNK):
        cols = c0 + tl.arange(0, CHUNK)
        ok = cols < n_cols
        v = tl.load(x_ptr + row * stride + cols, mask=ok, other=0.0).to(tl.float32)
        tl.store(
            y_ptr + row * stride + cols,
            (tl.cumsum(v, axis=0) + carry).to(y_ptr.dtype.element_ty),
            mask=ok,
        )
        carry += tl.sum(v, axis=0)


def row_cumsum(x: torch.Tensor):
    rows, cols = x.shape
    y = torch.empty_like(x)
    row_cumsum_kernel[(rows,)](x, y, cols, x.stride(0), CHUNK=32)
    return y
