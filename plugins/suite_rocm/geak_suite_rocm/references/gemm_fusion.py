"""Reference for rocm/test_gemm_fusion: E = fp16(A @ B^T) @ C, one row block per program."""

import triton
import triton.language as tl


@triton.jit
def gemm_fusion_kernel(A, B, C, E, M, N, K, stride_am, stride_ak, stride_bn, stride_bk,
                       stride_cn, stride_ck, stride_em, stride_ek, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(A + rm[:, None] * stride_am + rk[None, :] * stride_ak)
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        b_t = tl.load(B + rk[:, None] * stride_bk + rn[None, :] * stride_bn)  # (K, BLOCK_N)
        s = tl.dot(a, b_t).to(tl.float16)
        c = tl.load(C + rn[:, None] * stride_cn + rk[None, :] * stride_ck)  # (BLOCK_N, K)
        acc = tl.dot(s, c, acc)
    tl.store(E + rm[:, None] * stride_em + rk[None, :] * stride_ek, acc.to(tl.float16))
