"""Reference kernel for hello/scale: out = alpha * x."""

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)
