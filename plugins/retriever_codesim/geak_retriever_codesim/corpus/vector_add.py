"""Elementwise addition of two 1-D vectors, out = a + alpha * b, written as a
grid-stride loop: a fixed number of programs walk the vector in BLOCK-sized
chunks (the host passes the stride, programs * BLOCK), each masking the
ragged tail so no lane reads or writes past n. Shows the basic masked
tl.load / tl.store pattern, a runtime scalar argument, and how a small grid
can still cover any length (persistent elementwise kernel)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_vectors_kernel(a_ptr, b_ptr, out_ptr, n, alpha, stride, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    for first in range(0, n, stride):
        idx = first + start + tl.arange(0, BLOCK)
        inside = idx < n
        lhs = tl.load(a_ptr + idx, mask=inside)
        rhs = tl.load(b_ptr + idx, mask=inside)
        tl.store(out_ptr + idx, lhs + alpha * rhs, mask=inside)


def add_vectors(a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0, programs: int = 4):
    out = torch.empty_like(a)
    n = a.numel()
    n_programs = max(1, min(programs, triton.cdiv(n, 128)))
    add_vectors_kernel[(n_programs,)](a, b, out, n, alpha, n_programs * 128, BLOCK=128)
    return out
