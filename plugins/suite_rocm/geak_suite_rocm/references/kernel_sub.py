"""Reference for rocm/test_kernel_sub: o = a - 777 * b over N elements (N a power of two)."""

import triton
import triton.language as tl


@triton.jit
def kernel_sub(a, b, o, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(a + offsets).to(tl.float32)
    y = tl.load(b + offsets).to(tl.float32)
    tl.store(o + offsets, (x - 777.0 * y).to(o.dtype.element_ty))
