"""GEMM with block-scaled (microscaling, MX-style) A: A is stored as small
integers with one shared power-of-two scale per row and per 32 consecutive
K elements, encoded as an e8m0 byte (value 2^(byte - 127)). Each K step
loads a BLOCK_K = 32 slice of A plus the matching column of scale bytes,
dequantises in registers with exp2(scale - 127), and accumulates the
float32 tl.dot with a B tile. Storing 8-bit values plus one byte per 32
cuts A's memory traffic roughly fourfold against fp32."""

import torch
import triton
import triton.language as tl


@triton.jit
def block_scaled_matmul_kernel(
    a_ptr,
    a_scale_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_sm,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        rk = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        q = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :],
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0,
        )
        e8m0 = tl.load(a_scale_ptr + rm * stride_sm + kb, mask=rm < M, other=127)
        scale = tl.exp2(e8m0.to(tl.float32) - 127.0)
        a = q.to(tl.float32) * scale[:, None]
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :],
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b.to(tl.float32), acc)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :],
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def block_scaled_matmul(a_q: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor):
    """a_q int8 (M, K), a_scale uint8 (M, K // 32), b (K, N) -> float32 (M, N)."""
    (M, K), N = a_q.shape, b.shape[1]
    c = torch.empty((M, N), dtype=torch.float32)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    block_scaled_matmul_kernel[grid](
        a_q,
        a_scale,
        b,
        c,
        M,
        N,
        K,
        a_q.stride(0),
        a_scale.stride(0),
        b.stride(0),
        c.stride(0),
        BLOCK_M=16,
        BLOCK_N=16,
        BLOCK_K=32,
    )
    return c
