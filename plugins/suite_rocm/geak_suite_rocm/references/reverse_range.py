"""Reference for rocm/test_reverse_range: out[x] = in[512 - x] for x in [0, 512)."""

import triton
import triton.language as tl

SIZE = tl.constexpr(512)


@triton.jit
def reverse_range(in_ptr, out_ptr):
    offsets = tl.arange(0, SIZE)
    values = tl.load(in_ptr + (SIZE - offsets))
    tl.store(out_ptr + offsets, values)
