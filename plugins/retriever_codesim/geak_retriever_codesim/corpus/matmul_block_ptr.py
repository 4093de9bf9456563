"""GEMM with block pointers: tl.make_block_ptr describes each operand (shape,
strides, the tile's starting offsets, tile shape and memory order) and
tl.advance moves the A and B tiles along K each iteration. boundary_check
plus padding_option="zero" replaces hand-written masks at the matrix edges,
and the C tile is written through a block pointer too. On Hopper this form
is what the compiler can lower to TMA bulk copies; elsewhere it compiles to
ordinary masked loads."""

import torch
import triton
import triton.language as tl


@triton.jit
def block_ptr_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    m0 = tl.program_id(0) * BLOCK_M
    n0 = tl.program_id(1) * BLOCK_N
    a_blk = tl.make_block_ptr(
        a_ptr,
        shape=(M, K),
        strides=(stride_am, stride_ak),
        offsets=(m0, 0),
        block_shape=(BLOCK_M, BLOCK_K),
        order=(1, 0),
    )
    b_blk = tl.make_block_ptr(
        b_ptr,
        shape=(K, N),
        strides=(stride_bk, stride_bn),
        offsets=(0, n0),
        block_shape=(BLOCK_K, BLOCK_N),
        order=(1, 0),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_blk = tl.advance(a_blk, (0, BLOCK_K))
        b_blk = tl.advance(b_blk, (BLOCK_K, 0))
    c_blk = tl.make_block_ptr(
        c_ptr,
        shape=(M, N),
        strides=(stride_cm, stride_cn),
        offsets=(m0, n0),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    tl.store(c_blk, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def block_ptr_matmul(a: torch.Tensor, b: torch.Tensor, out_dtype=None):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=out_dtype or a.dtype)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    block_ptr_matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=32,
        BLOCK_N=32,
        BLOCK_K=16,
    )
    return c
