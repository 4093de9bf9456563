"""Two GEMMs fused into one kernel, out = (A @ B^T) @ C, as in an attention
block without the softmax: A is (M, D), B and C are (N, D), out is (M, D).
Each program keeps one BLOCK_M row block of A in registers, loops over N in
BLOCK_N steps computing the intermediate S = A_blk @ B_blk^T (cast to the
input dtype, as an unfused fp16 pipeline would store it) and immediately
accumulates S @ C_blk, so the M x N intermediate never touches memory. D is
a constexpr and is processed whole."""

import torch
import triton
import triton.language as tl


@triton.jit
def chained_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    out_ptr,
    M,
    N,
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, D)
    a = tl.load(a_ptr + rows[:, None] * D + d[None, :], mask=rows[:, None] < M, other=0.0)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        b_t = tl.load(b_ptr + cols[None, :] * D + d[:, None], mask=cols[None, :] < N, other=0.0)
        s = tl.dot(a, b_t).to(a_ptr.dtype.element_ty)
        c = tl.load(c_ptr + cols[:, None] * D + d[None, :], mask=cols[:, None] < N, other=0.0)
        acc = tl.dot(s, c, acc)
    tl.store(
        out_ptr + rows[:, None] * D + d[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=rows[:, None] < M,
    )


def chained_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor):
    M, D = a.shape
    N = b.shape[0]
    out = torch.empty((M, D), dtype=a.dtype)
    chained_matmul_kernel[(triton.cdiv(M, 16),)](a, b, c, out, M, N, D=D, BLOCK_M=16, BLOCK_N=16)
    return out
