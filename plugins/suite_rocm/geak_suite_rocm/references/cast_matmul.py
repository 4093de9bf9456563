"""Reference for rocm/test_cast_matmul: C = cast(A) @ cast(B) with a chosen accumulator type.

Tiles are visited in GROUP_M-row groups so consecutive programs share B
columns in cache. Rows and columns past the edge wrap (modulo) instead of
being masked on load; only the K tail is masked, and only the store is
bounds-checked. As in the original, the wrapped row and column indices are
declared contiguous and block-aligned, which lets the loads vectorise (true
where M and N are multiples of the blocks, as in every GPU case).
"""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    dot_out_dtype: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rows = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    cols = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptrs = A + rows[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + cols[None, :] * stride_bn
    compute_ty = C.dtype.element_ty

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=dot_out_dtype)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0).to(compute_ty)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0).to(compute_ty)
        acc = tl.dot(a, b, acc, out_dtype=dot_out_dtype)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = C + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptrs, acc.to(compute_ty), mask=mask)
