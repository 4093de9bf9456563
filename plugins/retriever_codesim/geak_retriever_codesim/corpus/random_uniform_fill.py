"""Fill a buffer with uniform random floats in [0, 1) using Triton's
counter-based Philox generator: tl.rand(seed, offsets) is a pure function of
the seed and each element's global offset, so the result does not depend on
the grid, the block size or the launch order, and any element can be
regenerated later (as dropout's backward does). The seed may be a runtime
argument or a tl.constexpr; the offsets' integer type (int32 or int64)
selects how many offset bits feed the counter."""

import torch
import triton
import triton.language as tl


@triton.jit
def uniform_fill_kernel(out_ptr, n, seed, OFFSET_TYPE: tl.constexpr, BLOCK: tl.constexpr):
    first = tl.program_id(0).to(OFFSET_TYPE) * BLOCK
    offsets = first + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.rand(seed, offsets), mask=offsets < n)


def uniform_fill(n: int, seed: int, wide_offsets: bool = False):
    out = torch.empty(n, dtype=torch.float32)
    offset_type = tl.int64 if wide_offsets else tl.int32
    uniform_fill_kernel[(triton.cdiv(n, 128),)](out, n, seed, OFFSET_TYPE=offset_type, BLOCK=128)
    return out
