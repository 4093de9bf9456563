"""Symmetric per-row int8 quantisation: each row's scale is max|x| / 127, the
values are divided by it, rounded to nearest (half away from zero),
clamped to [-127, 127] and stored as int8, and the float32 scale is stored
per row for dequantisation. An all-zero row gets scale 1 to avoid dividing
by zero. One program per row with the row in a single block; the absolute
maximum comes from tl.max(tl.abs(x))."""

import torch
import triton
import triton.language as tl


@triton.jit
def quantize_rows_kernel(x_ptr, q_ptr, scale_ptr, n_cols, stride_x, stride_q, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = tl.where(amax > 0, amax / 127.0, 1.0)
    v = x / scale
    rounded = tl.where(v >= 0, tl.floor(v + 0.5), tl.ceil(v - 0.5))
    q = tl.minimum(tl.maximum(rounded, -127.0), 127.0)
    tl.store(q_ptr + row * stride_q + cols, q.to(tl.int8), mask=ok)
    tl.store(scale_ptr + row, scale)


def quantize_rows(x: torch.Tensor):
    rows, cols = x.shape
    q = torch.empty((rows, cols), dtype=torch.int8)
    scale = torch.empty(rows, dtype=torch.float32)
    quantize_rows_kernel[(rows,)](
        x, q, scale, cols, x.stride(0), q.stride(0), BLOCK=triton.next_power_of_2(cols)
    )
    return q, scale
