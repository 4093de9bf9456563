"""Batched matrix multiplication (bmm) C[z] = A[z] @ B[z] for a stack of
independent GEMMs: the third grid axis is the batch index and each operand
carries a batch stride next to its row and column strides, so broadcast
operands (batch stride 0) and transposed views work without copies. Inside,
an ordinary masked tile loop over K with a float32 tl.dot accumulator."""

import torch
import triton
import triton.language as tl


@triton.jit
def bmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sa_z,
    sa_m,
    sa_k,
    sb_z,
    sb_k,
    sb_n,
    sc_z,
    sc_m,
    sc_n,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    z = tl.program_id(2)
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    a_base = a_ptr + z * sa_z
    b_base = b_ptr + z * sb_z
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        offs_k = k + tl.arange(0, BK)
        a = tl.load(
            a_base + offs_m[:, None] * sa_m + offs_k[None, :] * sa_k,
            mask=(offs_m[:, None] < M) & (offs_k[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_base + offs_k[:, None] * sb_k + offs_n[None, :] * sb_n,
            mask=(offs_k[:, None] < K) & (offs_n[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
    tl.store(
        c_ptr + z * sc_z + offs_m[:, None] * sc_m + offs_n[None, :] * sc_n,
        acc.to(c_ptr.dtype.element_ty),
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )


def bmm(a: torch.Tensor, b: torch.Tensor):
    batch, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((batch, M, N), dtype=a.dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16), batch)
    bmm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=16, BN=16, BK=16)
    return c
