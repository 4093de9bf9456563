"""Batched vector-matrix product where every row has its own matrix:
C[m, n] = sum_k A[m, k] * B[m, n, k], with A of shape (M, K), B (M, N, K)
and C (M, N). Each program owns a BLOCK_M x BLOCK_N tile of C, loads the
matching (BLOCK_M, BLOCK_K) slice of A and (BLOCK_M, BLOCK_N, BLOCK_K) slab
of B, multiplies with a broadcast over n and reduces over k with tl.sum.
Memory-bound: B is read exactly once, so no tl.dot is needed."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowwise_vecmat_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        vec = tl.load(
            a_ptr + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0
        )
        mat_off = m[:, None, None] * (N * K) + n[None, :, None] * K + k[None, None, :]
        mat_ok = (m[:, None, None] < M) & (n[None, :, None] < N) & (k[None, None, :] < K)
        mat = tl.load(b_ptr + mat_off, mask=mat_ok, other=0.0)
        acc += tl.sum(vec[:, None, :].to(tl.float32) * mat.to(tl.float32), axis=2)
    tl.store(
        c_ptr + m[:, None] * N + n[None, :],
        acc.to(c_ptr.dtype.element_ty),
        mask=(m[:, None] < M) & (n[None, :] < N),
    )


def rowwise_vecmat(a: torch.Tensor, b: torch.Tensor):
    M, N, K = b.shape
    c = torch.empty((M, N), dtype=a.dtype)
    grid = (triton.cdiv(M, 8), triton.cdiv(N, 16))
    rowwise_vecmat_kernel[grid](a, b, c, M, N, K, BLOCK_M=8, BLOCK_N=16, BLOCK_K=16)
    return c
