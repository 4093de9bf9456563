"""Reference for rocm/test_batched_vecmat: C[m, n] = sum_k A[m, k] * B[m, n, k].

The original's algorithm, kept so that speedups compare with published ones: program
(i, j) owns the block_m x block_n tile of C at rows i * block_m, columns j * block_n,
and walks K in dim_k // block_k steps. Each step loads a block_m x block_k slab of A
and the whole block_n x block_m x block_k brick of B (n leading, so that A broadcasts
over it), multiplies, sums over k, transposes the block_n x block_m partial to the
tile's shape and adds it to an accumulator in the inputs' dtype (float16 inputs
accumulate in float16, as in the original). The whole brick is live at once: at
32 x 32 x 128 it exceeds the registers and spills, as the original does; offsets
are 32-bit (dim_m * dim_n * dim_k < 2**31 at every size the harness runs).

The order of the computations follows the original's too: the output offsets before
the loop, the A and B offsets rebuilt from the program ids in every step. ptxas
allocates registers by that order: hoisting the row and column ranges out of the loop
gave float16 at 32 x 32 x 128 96 registers where the original has 32 (2.5x slower on
an H100); written this way every timed configuration compiles to the original's
register and spill counts (``ptxas -v``, sm_90a, Triton 3.6).
"""

import triton
import triton.language as tl


@triton.jit
def batched_vecmat(
    A, B, dim_m, dim_n, dim_k, output,
    block_m: tl.constexpr, block_n: tl.constexpr, block_k: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    out_at = ((pid_m * block_m + tl.arange(0, block_m))[:, None] * dim_n
              + (pid_n * block_n + tl.arange(0, block_n))[None, :])
    acc = tl.zeros((block_m, block_n), dtype=A.dtype.element_ty)
    for step in range(dim_k // block_k):
        a_at = ((pid_m * block_m + tl.arange(0, block_m))[:, None] * dim_k
                + (step * block_k + tl.arange(0, block_k))[None, :])
        a = tl.load(A + a_at)
        b_at = ((pid_m * block_m + tl.arange(0, block_m))[None, :, None] * dim_n * dim_k
                + (pid_n * block_n + tl.arange(0, block_n))[:, None, None] * dim_k
                + (step * block_k + tl.arange(0, block_k))[None, None, :])
        b = tl.load(B + b_at)
        a_over_n, _ = tl.broadcast(a, b)
        acc += tl.trans(tl.sum(a_over_n * b, axis=2))
    tl.store(output + out_at, acc)
