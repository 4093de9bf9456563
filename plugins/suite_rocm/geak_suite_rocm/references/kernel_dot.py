"""Reference for rocm/test_kernel_dot: Z = Z @ Z in place for one 16x16 tile."""

import triton
import triton.language as tl


@triton.jit
def kernel_dot(Z):
    offs = tl.arange(0, 16)
    ptrs = Z + offs[:, None] * 16 + offs[None, :]
    z = tl.load(ptrs)
    if z.dtype == tl.float32:
        acc = tl.dot(z, z, input_precision="ieee")
    else:
        acc = tl.dot(z, z)
    tl.store(ptrs, acc.to(Z.dtype.element_ty))
