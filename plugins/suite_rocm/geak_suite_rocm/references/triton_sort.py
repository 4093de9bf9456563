"""Reference for rocm/test_triton_sort: sort every row of an N x M tile.

As in the original, one program loads the whole tile and sorts it along its rows
with one tl.sort. (Sorting slabs of about 4096 elements instead compiles in a
tenth of the time, but runs up to four times faster than the original at 256 x 128,
and the suite's speedups are meant to be comparable with the paper's, measured
against the original.) Tiles of 16384 or more elements take tens of seconds each
to compile, once per Triton cache.
"""

import triton
import triton.language as tl


@triton.jit
def sort_kernel(X, Z, N: tl.constexpr, M: tl.constexpr, descending: tl.constexpr):
    # One program (the harness launches grid (1,)) sorts the whole tile.
    offs = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    x = tl.load(X + offs)
    tl.store(Z + offs, tl.sort(x, dim=1, descending=descending))
