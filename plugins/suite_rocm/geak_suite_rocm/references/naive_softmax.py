"""Reference for rocm/naive_softmax: row softmax, one program per row, three sweeps.

The original's algorithm: a sweep for the row maximum, a sweep for the sum of
exponentials, a sweep that normalises and stores; each sweep reduces every
BLOCK_SIZE chunk to a scalar. Arithmetic is in float32 whatever the input dtype.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel_naive(in_ptr, output_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_in = in_ptr + tl.program_id(0) * row_stride
    row_out = output_ptr + tl.program_id(0) * row_stride
    cols = tl.arange(0, BLOCK_SIZE)

    row_max = float("-inf")
    for start in range(0, n_cols, BLOCK_SIZE):
        chunk = tl.load(row_in + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        row_max = tl.maximum(row_max, tl.max(chunk.to(tl.float32), axis=0))

    denominator = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        chunk = tl.load(row_in + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        denominator += tl.sum(tl.exp(chunk.to(tl.float32) - row_max), axis=0)

    for start in range(0, n_cols, BLOCK_SIZE):
        in_row = start + cols < n_cols
        chunk = tl.load(row_in + start + cols, mask=in_row)
        y = tl.exp(chunk.to(tl.float32) - row_max) / denominator
        tl.store(row_out + start + cols, y.to(output_ptr.dtype.element_ty), mask=in_row)
