"""Sort every row of a (rows, cols) tile, ascending or descending, with
tl.sort: each program loads one row (cols a power of two, so the bitonic
sort network needs no padding), sorts it along the last dimension and stores
it. DESCENDING is a constexpr, so each direction compiles separately; for
top-k or argsort, sort (value, index) pairs packed into one integer key or
use tl.topk where available."""

import torch
import triton
import triton.language as tl


@triton.jit
def sort_rows_kernel(src, dst, COLS: tl.constexpr, DESCENDING: tl.constexpr):
    row = tl.program_id(0)
    offs = row * COLS + tl.arange(0, COLS)
    vals = tl.load(src + offs)
    tl.store(dst + offs, tl.sort(vals, descending=DESCENDING))


def sort_rows(x: torch.Tensor, descending: bool = False):
    rows, cols = x.shape
    out = torch.empty_like(x)
    sort_rows_kernel[(rows,)](x, out, COLS=cols, DESCENDING=descending)
    return out
