"""GEMM over operands of different floating types (for example fp32 A with
fp16 B, or fp64 inputs): both tiles are converted to one COMPUTE dtype
right after loading, since tl.dot needs matching operand types, and
tl.dot's out_dtype chooses the accumulator (float32 normally, float16 to
trade accuracy for speed). The result is cast to C's element type at the
store. The compute and accumulator types are tl.constexpr dtypes passed at
launch."""

import torch
import triton
import triton.language as tl


@triton.jit
def mixed_matmul_kernel(
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
    COMPUTE: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
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
        acc += tl.dot(a.to(COMPUTE), b.to(COMPUTE), out_dtype=ACC)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


TL_TYPES = {torch.float16: tl.float16, torch.float32: tl.float32, torch.bfloat16: tl.bfloat16}


def mixed_matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype, acc_dtype=torch.float32):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=out_dtype)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    mixed_matmul_kernel[grid](
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
        COMPUTE=TL_TYPES[out_dtype],
        ACC=TL_TYPES[acc_dtype],
        BLOCK_M=16,
        BLOCK_N=16,
        BLOCK_K=32,
    )
    return c
