"""Reference for rocm/test_triton_sort: sort every row of an N x M tile.

Like the original, one program sorts with tl.sort; the original sorts the whole tile
at once, this sorts slabs of rows of about 4096 elements: a whole 32768-element tile
takes ten times longer to compile (about 50 s a shape) for a kernel that runs in
microseconds.
"""

import triton
import triton.language as tl


@triton.jit
def sort_kernel(X, Z, N: tl.constexpr, M: tl.constexpr, descending: tl.constexpr):
    # One program owns the whole tile; sort it in row slabs of about 4096 elements.
    ROWS: tl.constexpr = N if N * M <= 4096 else (4096 // M if M < 4096 else 1)
    cols = tl.arange(0, M)
    for r0 in tl.range(0, N, ROWS):
        offs = (r0 + tl.arange(0, ROWS))[:, None] * M + cols[None, :]
        x = tl.load(X + offs)
        tl.store(Z + offs, tl.sort(x, dim=1, descending=descending))
