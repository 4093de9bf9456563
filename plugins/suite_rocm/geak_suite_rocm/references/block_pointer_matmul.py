"""Reference for rocm/test_block_pointer_matmul: C = A @ B by one program through block pointers.

The original's algorithm, kept so that speedups compare with published ones: the
harness makes the block the whole problem (BLOCK_M = M, ...), so one block-pointer
load of A and one of B (zero padding past the edges) feed a single tl.dot.
"""

import triton
import triton.language as tl


@triton.jit
def matmul_no_scf_with_advance_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
    stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    a_block = tl.make_block_ptr(
        a_ptr, shape=(M, K), strides=(stride_am, stride_ak), offsets=(0, 0),
        block_shape=(BLOCK_M, BLOCK_K), order=(1, 0),
    )
    b_block = tl.make_block_ptr(
        b_ptr, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, 0),
        block_shape=(BLOCK_K, BLOCK_N), order=(1, 0),
    )
    a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
    b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
    c = tl.dot(a, b)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             c.to(c_ptr.dtype.element_ty), mask=mask)
