"""Reference for rocm/test_batched_vecmat: C[m, n] = sum_k A[m, k] * B[m, n, k].

Each program owns a block_m x block_n tile of C and streams the matching rows
of B, reducing over k in float32. The original multiplies one whole
block_m x block_n x block_k brick per k step; this splits each brick in
sub-bricks of at most 4096 elements: a 131072-element brick (block 32/32/128)
spills registers and takes minutes to compile.
"""

import triton
import triton.language as tl


@triton.jit
def batched_vecmat(
    A, B, dim_m, dim_n, dim_k, output,
    block_m: tl.constexpr, block_n: tl.constexpr, block_k: tl.constexpr,
):
    # Reduce B in sub-bricks of at most 4096 elements: a whole block_m x block_n x block_k
    # brick would not fit in registers.
    SUB_K: tl.constexpr = min(block_k, max(4096 // (block_m * block_n), 1))
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * block_m + tl.arange(0, block_m)
    offs_n = pid_n * block_n + tl.arange(0, block_n)
    offs_k = tl.arange(0, SUB_K)
    a_ptrs = A + offs_m[:, None] * dim_k + offs_k[None, :]
    b_ptrs = (
        B
        + offs_m[:, None, None].to(tl.int64) * dim_n * dim_k
        + offs_n[None, :, None] * dim_k
        + offs_k[None, None, :]
    )
    acc = tl.zeros((block_m, block_n), dtype=tl.float32)
    for _ in range(0, dim_k, SUB_K):
        a = tl.load(a_ptrs).to(tl.float32)
        b = tl.load(b_ptrs).to(tl.float32)
        acc += tl.sum(a[:, None, :] * b, axis=2)
        a_ptrs += SUB_K
        b_ptrs += SUB_K
    c_ptrs = output + offs_m[:, None] * dim_n + offs_n[None, :]
    tl.store(c_ptrs, acc.to(output.dtype.element_ty))
