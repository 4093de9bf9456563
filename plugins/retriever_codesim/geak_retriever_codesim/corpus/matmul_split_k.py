"""Split-K GEMM for problems with a small M x N and a long K (too few output
tiles to fill the GPU): the grid gets a second axis of SPLIT_K programs per
output tile, each multiplies an interleaved share of the K blocks, and the
float32 partial tiles are summed into a zero-initialised output with
tl.atomic_add. Trades a little atomic traffic (and bitwise
reproducibility) for SPLIT_K times more parallelism."""

import torch
import triton
import triton.language as tl


@triton.jit
def split_k_matmul_kernel(
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
    SPLIT_K: tl.constexpr,
):
    tile = tl.program_id(0)
    part = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    rm = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(part * BLOCK_K, K, BLOCK_K * SPLIT_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    tl.atomic_add(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def split_k_matmul(a: torch.Tensor, b: torch.Tensor, split_k: int = 4):
    (M, K), N = a.shape, b.shape[1]
    c = torch.zeros((M, N), dtype=torch.float32)
    grid = (triton.cdiv(M, 16) * triton.cdiv(N, 16), split_k)
    split_k_matmul_kernel[grid](
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
        BLOCK_M=16,
        BLOCK_N=16,
        BLOCK_K=16,
        SPLIT_K=split_k,
    )
    return c
