"""Reference for rocm/test_block_pointer_matmul: C = A @ B by one program through block pointers.

The harness makes the block the whole problem (BLOCK_M = M, ...). K is walked
in slices of at most 64 so the operand tiles stay in registers; the slices
advance the block pointers, so any BLOCK_K is handled.
"""

import triton
import triton.language as tl


@triton.jit
def matmul_no_scf_with_advance_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
    stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    SUB_K: tl.constexpr = min(BLOCK_K, 64)
    a_block = tl.make_block_ptr(
        a_ptr, shape=(M, K), strides=(stride_am, stride_ak), offsets=(0, 0),
        block_shape=(BLOCK_M, SUB_K), order=(1, 0),
    )
    b_block = tl.make_block_ptr(
        b_ptr, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, 0),
        block_shape=(SUB_K, BLOCK_N), order=(1, 0),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, SUB_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, SUB_K))
        b_block = tl.advance(b_block, (SUB_K, 0))

    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
