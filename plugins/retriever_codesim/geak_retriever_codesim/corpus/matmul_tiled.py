"""Tiled matrix multiplication C = A @ B (GEMM) on a 2-D grid: program (i, j)
owns the BLOCK_M x BLOCK_N tile of C, walks K in BLOCK_K steps, multiplies
the A and B tiles with tl.dot into a float32 accumulator and stores the tile
cast to C's dtype. All three operands take arbitrary strides (row-major,
column-major or transposed views) and every edge is masked, so M, N and K
need not be multiples of the block sizes. Block sizes must be at least 16
for tl.dot."""

import torch
import triton
import triton.language as tl


@triton.jit
def tiled_matmul_kernel(
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
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=c_mask,
    )


def tiled_matmul(a: torch.Tensor, b: torch.Tensor, block=(32, 32, 16)):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype)
    bm, bn, bk = block
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    tiled_matmul_kernel[grid](
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
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
    )
    return c
