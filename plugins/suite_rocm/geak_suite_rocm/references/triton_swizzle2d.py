"""Reference for rocm/test_triton_swizzle2d.

Instead of scattering each linear index to its swizzled position, every output element computes
which (i, j) lands on it (the inverse of tl.swizzle2d), so the stores are coalesced.
"""

import triton
import triton.language as tl

TILE_I = tl.constexpr(16)
TILE_J = tl.constexpr(128)


@triton.jit
def swizzle2d_kernel(output, size_i, size_j, size_g):
    for r0 in range(0, size_i, TILE_I):
        r = r0 + tl.arange(0, TILE_I)
        # first row of r's group of size_g rows; the last group may hold fewer rows
        group_row = (r // size_g) * size_g
        group_rows = tl.minimum(size_i - group_row, size_g)
        for c0 in range(0, size_j, TILE_J):
            c = c0 + tl.arange(0, TILE_J)
            # within a group, linear indices run down the columns (column-major)
            value = (group_row[:, None] * size_j + c[None, :] * group_rows[:, None]
                     + (r - group_row)[:, None])
            mask = (r[:, None] < size_i) & (c[None, :] < size_j)
            tl.store(output + r[:, None] * size_j + c[None, :],
                     value.to(output.dtype.element_ty), mask=mask)
