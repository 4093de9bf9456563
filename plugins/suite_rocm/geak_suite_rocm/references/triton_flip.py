"""Reference for rocm/test_triton_flip: Z[r, c] = X[r, M - 1 - c] for an N x M tile.

The original's algorithm, kept so that speedups compare with published ones: the
program loads the whole tile, reverses its last dimension with tl.flip and stores
it. (tl.flip needs its dimension spelled out under Triton 3.6; without one it
raises a TypeError.)
"""

import triton
import triton.language as tl


@triton.jit
def flip_kernel(X, Z, N: tl.constexpr, M: tl.constexpr):
    offsets = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tile = tl.load(X + offsets)
    tl.store(Z + offsets, tl.flip(tile, 1))
