"""Reference for rocm/softmax: row softmax, one program per row, two sweeps.

The original's algorithm, kept so that speedups compare with published ones: an
online sweep reduces each BLOCK_SIZE chunk to its maximum and folds it into a
running maximum and a rescaled running sum (both scalars), then a second sweep
normalises and stores. Loads bypass L1 (".cg"), as in the original. Arithmetic is
in float32 whatever the input dtype.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel_online(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    row_in = input_ptr + row * input_row_stride
    row_out = output_ptr + row * output_row_stride
    lanes = tl.arange(0, BLOCK_SIZE)

    running_max = float("-inf")
    running_sum = 0.0
    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + lanes
        x = tl.load(row_in + cols, mask=cols < n_cols, other=float("-inf"), cache_modifier=".cg")
        x = x.to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max

    for start in tl.range(0, n_cols, BLOCK_SIZE):
        cols = start + lanes
        mask = cols < n_cols
        x = tl.load(row_in + cols, mask=mask, other=float("-inf"), cache_modifier=".cg")
        y = tl.exp(x.to(tl.float32) - running_max) / running_sum
        tl.store(row_out + cols, y.to(output_ptr.dtype.element_ty), mask=mask)
