"""Reference for rocm/test_triton_sort: sort every row of an N x M tile.

The original's algorithm, kept so that speedups compare with published ones: the
program loads the whole tile, sorts along its last dimension with tl.sort and
stores it.
"""

import triton
import triton.language as tl


@triton.jit
def sort_kernel(X, Z, N: tl.constexpr, M: tl.constexpr, descending: tl.constexpr):
    offsets = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tile = tl.load(X + offsets)
    tl.store(Z + offsets, tl.sort(tile, dim=1, descending=descending))
