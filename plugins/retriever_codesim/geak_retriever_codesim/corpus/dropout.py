"""Dropout without a stored mask: each element keeps its value scaled by
1 / (1 - p) when tl.rand(seed, offset) >= p and becomes zero otherwise.
Because Philox is counter-based, the same (seed, offset) pair always gives
the same draw, so the backward pass can rebuild the mask from the seed
instead of reading a saved boolean tensor: one fewer read and write of the
activation size."""

import torch
import triton
import triton.language as tl


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok)
    keep = tl.rand(seed, offs) >= p
    tl.store(out_ptr + offs, tl.where(keep, x / (1.0 - p), 0.0), mask=ok)


def seeded_dropout(x: torch.Tensor, p: float, seed: int):
    out = torch.empty_like(x)
    n = x.numel()
    seeded_dropout_kernel[(triton.cdiv(n, 128),)](x, out, n, p, seed, BLOCK=128)
    return out
