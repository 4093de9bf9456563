"""Reference for rocm/test_matmul_MXFP: pipelined GEMM, plain (fp16/fp32) or MX-scaled.

Scaled mode (a_type and b_type set): A holds e2m1 values packed two per byte along K, one e8m0
scale byte per 32 A values, B holds fp8 bytes; tl.dot_scaled multiplies them. Plain mode: a
tl.dot of fp16 or fp32 tiles (fp32 at IEEE precision). K is walked with a pipelined loop of
NUM_STAGES stages.
"""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, scale_ptr, b_ptr, output_ptr, M, N, K_MXFP, stride_am, stride_ak,
                  stride_sm, stride_sk, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  NUM_STAGES: tl.constexpr, a_type: tl.constexpr, b_type: tl.constexpr):
    IS_SCALED: tl.constexpr = a_type is not None and b_type is not None
    A_PACK: tl.constexpr = 2 if IS_SCALED else 1  # e2m1: two values per byte
    BLOCK_AK: tl.constexpr = BLOCK_K // A_PACK

    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_ptrs = a_ptr + rm[:, None] * stride_am + tl.arange(0, BLOCK_AK)[None, :] * stride_ak
    b_ptrs = b_ptr + tl.arange(0, BLOCK_K)[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)

    if IS_SCALED:
        s_ptrs = (scale_ptr + rm[:, None] * stride_sm
                  + tl.arange(0, BLOCK_K // 32)[None, :] * stride_sk)
        for _ in tl.range(0, K_MXFP * 32, BLOCK_K, num_stages=NUM_STAGES):
            a = tl.load(a_ptrs)
            scale = tl.load(s_ptrs)
            b = tl.load(b_ptrs)
            acc = tl.dot_scaled(a, scale, a_type, b, None, b_type, acc)
            a_ptrs += BLOCK_AK * stride_ak
            s_ptrs += (BLOCK_K // 32) * stride_sk
            b_ptrs += BLOCK_K * stride_bk
    else:
        for _ in tl.range(0, K_MXFP, BLOCK_K, num_stages=NUM_STAGES):
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
            if a.dtype == tl.float32:
                acc = tl.dot(a, b, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk

    c_ptrs = output_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(output_ptr.dtype.element_ty))
