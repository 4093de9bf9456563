"""Reference for rocm/test_batched_vecmat: C[m, n] = sum_k A[m, k] * B[m, n, k].

The original's algorithm, kept so that speedups compare with published ones: each
program owns a block_m x block_n tile of C and, per block_k step, multiplies a whole
block_m x block_n x block_k brick of B by the broadcast rows of A and sums over k
(here in float32).
"""

import triton
import triton.language as tl


@triton.jit
def batched_vecmat(
    A, B, dim_m, dim_n, dim_k, output,
    block_m: tl.constexpr, block_n: tl.constexpr, block_k: tl.constexpr,
):
    offs_m = tl.program_id(0) * block_m + tl.arange(0, block_m)
    offs_n = tl.program_id(1) * block_n + tl.arange(0, block_n)
    offs_k = tl.arange(0, block_k)
    a_ptrs = A + offs_m[:, None] * dim_k + offs_k[None, :]
    b_ptrs = B + (offs_m[:, None, None] * dim_n + offs_n[None, :, None]) * dim_k + offs_k[None, None, :]
    acc = tl.zeros((block_m, block_n), dtype=tl.float32)
    for _ in range(0, dim_k // block_k):
        a = tl.load(a_ptrs).to(tl.float32)
        b = tl.load(b_ptrs).to(tl.float32)
        acc += tl.sum(a[:, None, :] * b, axis=2)
        a_ptrs += block_k
        b_ptrs += block_k
    tl.store(output + offs_m[:, None] * dim_n + offs_n[None, :], acc.to(output.dtype.element_ty))
