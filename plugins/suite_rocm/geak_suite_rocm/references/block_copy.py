"""Reference for rocm/test_block_copy: b[:N//2] = a[:N//2], b[N//2:] = padding.

Both tensors are read and written through block pointers; the source's extent
is N // 2, so the boundary check supplies the padding for the second half.
"""

import triton
import triton.language as tl


@triton.jit
def block_copy_kernel(a_ptr, b_ptr, N, BLOCK_SIZE: tl.constexpr, padding_option: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    src = tl.make_block_ptr(
        a_ptr, shape=(N // 2,), strides=(1,), offsets=(start,), block_shape=(BLOCK_SIZE,),
        order=(0,),
    )
    dst = tl.make_block_ptr(
        b_ptr, shape=(N,), strides=(1,), offsets=(start,), block_shape=(BLOCK_SIZE,), order=(0,)
    )
    values = tl.load(src, boundary_check=(0,), padding_option=padding_option)
    tl.store(dst, values, boundary_check=(0,))
