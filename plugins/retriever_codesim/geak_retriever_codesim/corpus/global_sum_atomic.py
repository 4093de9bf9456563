"""Sum of all elements of a tensor into one float32 scalar: each program
reduces its BLOCK of elements with tl.sum and adds the partial result to the
output with tl.atomic_add. The output must be zeroed before the launch.
Atomic accumulation makes the result order-dependent in the last bits (fine
for losses and norms, not for bitwise reproducibility); a two-pass
reduction into per-program partials avoids that."""

import torch
import triton
import triton.language as tl


@triton.jit
def total_sum_kernel(x_ptr, total_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + offs, mask=offs < numel, other=0.0).to(tl.float32)
    tl.atomic_add(total_ptr, tl.sum(vals, axis=0))


def total_sum(x: torch.Tensor):
    total = torch.zeros(1, dtype=torch.float32)
    numel = x.numel()
    total_sum_kernel[(triton.cdiv(numel, 256),)](x, total, numel, BLOCK=256)
    return total[0]
