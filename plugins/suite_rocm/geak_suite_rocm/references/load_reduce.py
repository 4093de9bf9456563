"""Reference for rocm/test_load_reduce: y[m] = max_n x[m, n] for a BLOCK_M x BLOCK_N matrix."""

import triton
import triton.language as tl


@triton.jit
def load_reduce_kernel(x_ptr, y_ptr, stride_xm, stride_xn, stride_y,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program owns the whole matrix; walk it in row slabs of about 4096 elements so large
    # tiles do not spill registers.
    ROWS: tl.constexpr = BLOCK_M if BLOCK_M * BLOCK_N <= 4096 else 4096 // BLOCK_N
    cols = tl.arange(0, BLOCK_N)
    for m0 in tl.range(0, BLOCK_M, ROWS):
        rows = m0 + tl.arange(0, ROWS)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn)
        tl.store(y_ptr + rows * stride_y, tl.max(x, axis=1))
