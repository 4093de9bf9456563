"""Sum of each row of a 2-D matrix, for rows of any length: one program per
row walks the columns in BLOCK-wide chunks, accumulating in a float32 vector
and reducing it with tl.sum once at the end (one horizontal reduction
instead of one per chunk). Inputs of lower precision (fp16, bf16) are upcast
before accumulation so long rows do not lose digits."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride_row
    partial = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        partial += tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(partial, axis=0))


def row_sum(x: torch.Tensor):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=torch.float32)
    row_sum_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=64)
    return out
