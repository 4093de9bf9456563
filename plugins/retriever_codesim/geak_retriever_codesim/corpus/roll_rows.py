"""Circular shift of every row by a runtime amount, like torch.roll(x,
shift, dims=1): out[r, (c + shift) mod n] = x[r, c]. Each program reads a
contiguous chunk of one row and scatters it to the rotated columns; the
destination index is computed with a modulo on a non-negative shift (the
host folds negative shifts into 0..n-1), so a chunk that crosses the end of
the row wraps around. Writing to computed addresses instead of reading from
them keeps the loads coalesced."""

import torch
import triton
import triton.language as tl


@triton.jit
def roll_rows_kernel(src, dst, n_cols, shift, src_stride, dst_stride, CHUNK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1) * CHUNK + tl.arange(0, CHUNK)
    ok = c < n_cols
    v = tl.load(src + r * src_stride + c, mask=ok)
    target = (c + shift) % n_cols
    tl.store(dst + r * dst_stride + target, v, mask=ok)


def roll_rows(x: torch.Tensor, shift: int):
    rows, cols = x.shape
    out = torch.empty_like(x)
    roll_rows_kernel[(rows, triton.cdiv(cols, 64))](
        x, out, cols, shift % cols, x.stride(0), out.stride(0), CHUNK=64
    )
    return out
