"""Reference for rocm/test_triton_flip: Z[r, c] = X[r, M - 1 - c] for an N x M tile.

The flip is a reversed-offset load rather than tl.flip, whose implementation raises a
TypeError when compiled with Triton 3.6.
"""

import triton
import triton.language as tl


@triton.jit
def flip_kernel(X, Z, N: tl.constexpr, M: tl.constexpr):
    # One program owns the whole tile; walk it in row slabs of about 4096 elements.
    ROWS: tl.constexpr = N if N * M <= 4096 else 4096 // M
    cols = tl.arange(0, M)
    for r0 in tl.range(0, N, ROWS):
        rows = r0 + tl.arange(0, ROWS)
        x = tl.load(X + rows[:, None] * M + (M - 1 - cols)[None, :])
        tl.store(Z + rows[:, None] * M + cols[None, :], x)
