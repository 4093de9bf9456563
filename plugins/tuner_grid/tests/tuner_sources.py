"""Kernel sources the tuner's tests share."""

import textwrap

# A vector add whose block size is a constexpr set at its launch site (the tests add the launch).
ADD_KERNEL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)
''')

# A vector add launched at the smallest configuration (one warp, one stage, blocks of 16).
DETUNED_ADD = ADD_KERNEL + textwrap.dedent('''\


    def add(x, y, out):
        n = out.numel()
        add_kernel[(triton.cdiv(n, 16),)](x, y, out, n, BLOCK_SIZE=16, num_warps=1, num_stages=1)
        return out
''')

# A tiled matmul with a K loop, launched with a typical configuration (and an AMD-only option).
MATMUL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def mm_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
        rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc)


    def mm(a, b, c, M, N, K):
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        mm_kernel[grid](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8,
                        num_stages=3, waves_per_eu=2)
''')

# The same matmul at its smallest configuration, its grid following the blocks.
DETUNED_MATMUL = MATMUL.replace(
    "grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))",
    'grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731',
).replace("BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8,\n                    num_stages=3",
          "BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=1,\n                    num_stages=1")

# A row reduction that walks each row in BLOCK_SIZE chunks: a loop, so num_stages is tunable.
ROW_SUM = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        lanes = tl.arange(0, BLOCK_SIZE)
        acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
        for block in range(0, n_blocks):
            cols = block * BLOCK_SIZE + lanes
            acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row, tl.sum(acc, axis=0))


    def row_sum(x, out):
        n_rows, n_cols = x.shape
        row_sum_kernel[(n_rows,)](x, out, n_cols, BLOCK_SIZE=16, num_warps=1, num_stages=1)
        return out
''')
