"""Reference for rocm/triton_multreduce_matmul_kernel: C = A @ B (+ bias per row).

The multiply-and-reduce path walks K in steps small enough that the broadcast product
(BLOCK_SIZE_M x step x BLOCK_SIZE_N) stays within MAX_PRODUCT elements, so large blocks do not
spill registers; the tl.dot path walks K in BLOCK_SIZE_K steps.
"""

import triton
import triton.language as tl

MAX_PRODUCT = tl.constexpr(8192)


@triton.jit
def triton_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak,
                         stride_bk, stride_bn, stride_cm, stride_cn, stride_bias,
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                         BLOCK_SIZE_K: tl.constexpr, USE_BIAS: tl.constexpr,
                         USE_DOT: tl.constexpr, EVEN_K: tl.constexpr):
    TILE_MN: tl.constexpr = BLOCK_SIZE_M * BLOCK_SIZE_N
    SUB_K: tl.constexpr = (BLOCK_SIZE_K if TILE_MN * BLOCK_SIZE_K <= MAX_PRODUCT
                           else (MAX_PRODUCT // TILE_MN if TILE_MN <= MAX_PRODUCT else 1))
    STEP_K: tl.constexpr = BLOCK_SIZE_K if USE_DOT else SUB_K

    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    rn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    rk = tl.arange(0, STEP_K)
    mask_m = rm < M
    mask_n = rn < N
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, K, STEP_K):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=mask_m[:, None], other=0.0)
            b = tl.load(b_ptrs, mask=mask_n[None, :], other=0.0)
        else:
            mask_k = (k + rk) < K
            a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        if USE_DOT:
            acc = tl.dot(a, b, acc)
        else:
            prod = a.to(tl.float32)[:, :, None] * b.to(tl.float32)[None, :, :]
            acc += tl.sum(prod, axis=1)
        a_ptrs += STEP_K * stride_ak
        b_ptrs += STEP_K * stride_bk

    if USE_BIAS:
        bias = tl.load(bias_ptr + rm * stride_bias, mask=mask_m, other=0.0)
        acc += bias.to(tl.float32)[:, None]
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def triton_multreduce_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am,
                                    stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                                    stride_bias, BLOCK_SIZE_M: tl.constexpr,
                                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                    USE_BIAS: tl.constexpr, EVEN_K: tl.constexpr):
    triton_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak,
                         stride_bk, stride_bn, stride_cm, stride_cn, stride_bias,
                         BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, USE_BIAS, False, EVEN_K)
