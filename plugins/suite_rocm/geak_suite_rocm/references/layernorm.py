"""Reference for rocm/layernorm: LayerNorm forward, one program per row, three sweeps.

The original's algorithm, kept so that speedups compare with published ones: one
sweep sums the row (mean), one sums the centred squares (variance, without the
cancellation of a one-pass E[x^2] - E[x]^2), one normalises and stores. Each sweep
takes the row's full BLOCK_SIZE blocks unmasked into a per-lane float32
accumulator, then the masked last block; a row of at most one block is read three
times too.
"""

import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
    eps, BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    lanes = tl.arange(0, BLOCK_SIZE)
    full_blocks = tl.cdiv(n_cols, BLOCK_SIZE) - 1
    last = full_blocks * BLOCK_SIZE + lanes
    last_mask = last < n_cols

    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for block in range(0, full_blocks):
        acc += tl.load(x_row + block * BLOCK_SIZE + lanes).to(tl.float32)
    acc += tl.load(x_row + last, mask=last_mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for block in range(0, full_blocks):
        centred = tl.load(x_row + block * BLOCK_SIZE + lanes).to(tl.float32) - mean
        acc += centred * centred
    x = tl.load(x_row + last, mask=last_mask, other=0.0).to(tl.float32)
    centred = tl.where(last_mask, x - mean, 0.0)
    acc += centred * centred
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)

    out_ty = y_ptr.dtype.element_ty
    for block in range(0, full_blocks):
        cols = block * BLOCK_SIZE + lanes
        x = tl.load(x_row + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
        b = tl.load(b_ptr + cols).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(out_ty))
    x = tl.load(x_row + last, mask=last_mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + last, mask=last_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + last, mask=last_mask, other=0.0).to(tl.float32)
    tl.store(y_row + last, ((x - mean) * rstd * w + b).to(out_ty), mask=last_mask)
