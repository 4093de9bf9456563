"""Reference for rocm/test_triton_flip: Z[r, c] = X[r, M - 1 - c] for an N x M tile.

The original's algorithm, kept so that speedups compare with published ones: load
the tile, reverse its last dimension with tl.flip, store it. tl.flip stages the
tile in shared memory, and a 65536-element tile of a 32-bit type needs 256 KiB,
more than a GPU thread block may use (the original fails there), so the tile is
flipped in slabs of rows of at most 128 KiB: a single slab, the original's
schedule, wherever the original runs. (Under Triton 3.6 tl.flip needs its
dimension spelled out; without one it raises a TypeError.)
"""

import triton
import triton.language as tl

SLAB_BYTES = tl.constexpr(131072)


@triton.jit
def flip_kernel(X, Z, N: tl.constexpr, M: tl.constexpr):
    ELEMENT_BYTES: tl.constexpr = X.dtype.element_ty.primitive_bitwidth // 8
    ROWS: tl.constexpr = min(N, max(1, SLAB_BYTES // (M * ELEMENT_BYTES)))
    cols = tl.arange(0, M)
    for first in tl.range(0, N, ROWS):
        offsets = (first + tl.arange(0, ROWS))[:, None] * M + cols[None, :]
        tl.store(Z + offsets, tl.flip(tl.load(X + offsets), 1))
