"""Reference for rocm/test_chained_matmul: out = cast(A @ B^T) @ C, one row block per program.

The A row block stays in registers while B and C are streamed in block_n row
slices; the intermediate never leaves the chip.
"""

import triton
import triton.language as tl


@triton.jit
def chained_matmul_kernel(
    A, B, C, out, m, n, k: tl.constexpr,
    block_m: tl.constexpr, block_n: tl.constexpr, block_k: tl.constexpr,
):
    tl.static_assert(block_k == k, "block_k must equal k: each program holds whole rows of A")
    pid = tl.program_id(0)
    offs_m = pid * block_m + tl.arange(0, block_m)
    offs_k = tl.arange(0, block_k)
    row_ok = offs_m < m
    a = tl.load(A + offs_m[:, None] * k + offs_k[None, :], mask=row_ok[:, None], other=0.0)

    acc = tl.zeros((block_m, block_k), dtype=tl.float32)
    for start in range(0, n, block_n):
        offs_n = start + tl.arange(0, block_n)
        col_ok = offs_n < n
        rows = offs_n[:, None] * k + offs_k[None, :]
        b = tl.load(B + rows, mask=col_ok[:, None], other=0.0)
        c = tl.load(C + rows, mask=col_ok[:, None], other=0.0)
        s = tl.dot(a, tl.trans(b)).to(A.dtype.element_ty)
        acc = tl.dot(s, c, acc)

    tl.store(
        out + offs_m[:, None] * k + offs_k[None, :],
        acc.to(out.dtype.element_ty),
        mask=row_ok[:, None],
    )
