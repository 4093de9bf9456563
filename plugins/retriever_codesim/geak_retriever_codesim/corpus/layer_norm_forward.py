"""LayerNorm forward over the last dimension, y = (x - mean) * rstd * w + b,
one program per row, also storing each row's mean and rstd (1 / sqrt(var +
eps)) in float32 for a backward pass. Rows longer than BLOCK are handled in
three sweeps over column chunks: sum for the mean, sum of squared
deviations for the variance (two-pass, stable), then normalise, scale and
shift. Statistics are accumulated in float32 whatever the input dtype."""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    acc = tl.zeros((BLOCK,), tl.float32)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    sq = tl.zeros((BLOCK,), tl.float32)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, v - mean, 0.0)
        sq += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        inside = cols < n_cols
        v = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=inside).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=inside).to(tl.float32)
        out = (v - mean) * rstd * w + b
        tl.store(y_row + cols, out.to(y_ptr.dtype.element_ty), mask=inside)


def layer_norm_fwd(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5):
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32)
    rstd = torch.empty(rows, dtype=torch.float32)
    block = min(64, triton.next_power_of_2(cols))
    layer_norm_fwd_kernel[(rows,)](x, w, b, y, mean, rstd, x.stride(0), cols, eps, BLOCK=block)
    return y, mean, rstd
