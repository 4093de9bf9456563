"""Reference for rocm/layernorm: LayerNorm forward, one program per row.

A row that fits in one block stays in registers; a longer row is read three
times (mean, centred sum of squares, normalise), which keeps the variance
accurate without a one-pass E[x^2] - E[x]^2 cancellation.
"""

import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
    eps, BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    out_ty = y_ptr.dtype.element_ty

    if n_cols <= BLOCK_SIZE:
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / n_cols
        centred = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (centred * rstd * w + b).to(out_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_SIZE], tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            offs = start + cols
            acc += tl.load(x_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros([BLOCK_SIZE], tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            centred = tl.where(mask, x - mean, 0.0)
            acc += centred * centred
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for start in range(0, n_cols, BLOCK_SIZE):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + offs, ((x - mean) * rstd * w + b).to(out_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
