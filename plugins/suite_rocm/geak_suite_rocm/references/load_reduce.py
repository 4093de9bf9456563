"""Reference for rocm/test_load_reduce: y[m] = max_n x[m, n] for a BLOCK_M x BLOCK_N matrix.

The original's algorithm, kept so that speedups compare with published ones: one
program reads the whole matrix as a single tile through a block pointer (shape and
block both BLOCK_M x BLOCK_N, row-major order, no boundary check) and reduces it
along its rows. The compiler lowers a block-pointer load differently from a tile of
pointers (layout, registers per thread), so the tile is loaded the way the original
loads it. y is written with stride_y, which the harness passes as 1 (Triton then
compiles the original's contiguous store).
"""

import triton
import triton.language as tl


@triton.jit
def load_reduce_kernel(x_ptr, y_ptr, stride_xm, stride_xn, stride_y,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    matrix = tl.make_block_ptr(
        base=x_ptr,
        shape=(BLOCK_M, BLOCK_N),
        strides=(stride_xm, stride_xn),
        offsets=(0, 0),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    row_max = tl.max(tl.load(matrix), axis=1)
    tl.store(y_ptr + tl.arange(0, BLOCK_M) * stride_y, row_max)
