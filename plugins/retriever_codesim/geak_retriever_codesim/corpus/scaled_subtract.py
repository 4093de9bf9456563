"""Elementwise difference with a compile-time coefficient, out = a - SCALE * b,
over a flat buffer. SCALE is a tl.constexpr, so it is folded into the
compiled kernel (one binary per value); the element count is a runtime
argument and the last block is masked. A minimal example of constexpr
arithmetic constants and of subtracting scaled vectors."""

import torch
import triton
import triton.language as tl


@triton.jit
def subtract_scaled_kernel(a_ptr, b_ptr, out_ptr, count, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < count
    a = tl.load(a_ptr + offs, mask=keep, other=0.0)
    b = tl.load(b_ptr + offs, mask=keep, other=0.0)
    tl.store(out_ptr + offs, a - SCALE * b, mask=keep)


def subtract_scaled(a: torch.Tensor, b: torch.Tensor, scale: float):
    out = torch.empty_like(a)
    count = a.numel()
    block = 64
    subtract_scaled_kernel[(triton.cdiv(count, block),)](a, b, out, count, SCALE=scale, BLOCK=block)
    return out
