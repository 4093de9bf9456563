"""Reference for rocm/moe_gemm: fused mixture-of-experts GEMM over routed, expert-sorted token rows.

Each program takes BLOCK_SIZE_M consecutive entries of the expert-sorted
(token, slot) list, all routed to one expert, and computes their
BLOCK_SIZE_N output columns: gathered rows of A times that expert's weight
matrix, then optional dequantisation scales and routing weight. Padding
entries (-1) are masked on load and store.
"""

import triton
import triton.language as tl


@triton.jit
def moe_gemm_kernel(
    A, B, Out, A_scale, B_scale, stride_am, stride_ak, stride_be, stride_bn, stride_bk,
    stride_cm, stride_cn, stride_bse, stride_bsn, top_k: tl.constexpr, topk_weights_ptr,
    sorted_token_ids_ptr, expert_ids_ptr, EM: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
    EVEN_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, use_fp8_w8a8: tl.constexpr,
    use_int8_w8a16: tl.constexpr, use_int8_w8a8: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pids_per_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // pids_per_group) * GROUP_SIZE_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows

    offs_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_token = tl.load(sorted_token_ids_ptr + offs_id, mask=offs_id < EM, other=-1)
    token_mask = (offs_token >= 0) & (offs_token < EM)
    safe_token = tl.where(token_mask, offs_token, 0)
    rows = safe_token // top_k
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)

    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    cols = offs_n % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = A + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + expert * stride_be + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn

    INT_DOT: tl.constexpr = use_int8_w8a8
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32 if INT_DOT else tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=token_mask[:, None], other=0.0)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_SIZE_K
            a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if use_int8_w8a16:
            b = b.to(a.dtype)
        if INT_DOT:
            acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if use_int8_w8a16:
        b_scale = tl.load(B_scale + expert * stride_bse + cols * stride_bsn)
        out = acc * b_scale[None, :]
    elif use_fp8_w8a8 or use_int8_w8a8:
        out = acc.to(tl.float32) * (tl.load(A_scale) * tl.load(B_scale + expert))
    else:
        out = acc
    if MUL_ROUTED_WEIGHT:
        weight = tl.load(topk_weights_ptr + safe_token, mask=token_mask, other=0.0)
        out = out * weight[:, None]

    c_ptrs = Out + safe_token[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = token_mask[:, None] & (offs_n[None, :] < N)
    tl.store(c_ptrs, out.to(Out.dtype.element_ty), mask=c_mask)
