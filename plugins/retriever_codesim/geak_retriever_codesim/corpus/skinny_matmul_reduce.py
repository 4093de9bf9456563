"""Skinny GEMM for decode-sized M (a handful of rows) with an optional per-row
bias, C = A @ B + bias[:, None], computed without tl.dot: the A tile
(BLOCK_M x BLOCK_K) and B tile (BLOCK_K x BLOCK_N) are broadcast to a 3-D
product and reduced over K with tl.sum (multiply-and-reduce). This avoids
tl.dot's 16-row minimum, which would waste most of a matrix instruction when
M is 1 to 8. The bias pointer may be None when USE_BIAS is False."""

import torch
import triton
import triton.language as tl


@triton.jit
def skinny_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    USE_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        ).to(tl.float32)
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        ).to(tl.float32)
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    if USE_BIAS:
        acc += tl.load(bias_ptr + rm, mask=rm < M, other=0.0).to(tl.float32)[:, None]
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def skinny_matmul(a: torch.Tensor, b: torch.Tensor, bias=None):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype)
    grid = (triton.cdiv(M, 4), triton.cdiv(N, 32))
    skinny_matmul_kernel[grid](
        a,
        b,
        c,
        bias,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        USE_BIAS=bias is not None,
        BLOCK_M=4,
        BLOCK_N=32,
        BLOCK_K=32,
    )
    return c
