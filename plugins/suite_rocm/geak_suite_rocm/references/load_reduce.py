"""Reference for rocm/test_load_reduce: y[m] = max_n x[m, n] for a BLOCK_M x BLOCK_N matrix.

The original's algorithm, kept so that speedups compare with published ones: one
program loads the whole matrix as a single tile and reduces it along its rows.
"""

import triton
import triton.language as tl


@triton.jit
def load_reduce_kernel(x_ptr, y_ptr, stride_xm, stride_xn, stride_y,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn)
    tl.store(y_ptr + rows * stride_y, tl.max(x, axis=1))
