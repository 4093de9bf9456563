"""Residual add fused with RMSNorm, as in a transformer block: s = x + r is
written back (it is the next block's residual) and normalised in the same
pass, y = s * rsqrt(mean(s^2) + eps) * w, so s is read from registers
instead of being stored and loaded again. One program per row; the row is
processed whole (BLOCK is the next power of two of its length) and the
sum of squares is accumulated in float32 whatever the input dtype."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_rms_norm_kernel(
    x_ptr, res_ptr, w_ptr, sum_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    ok = col < n_cols
    base = row * stride + col
    s = tl.load(x_ptr + base, mask=ok, other=0.0).to(tl.float32)
    s += tl.load(res_ptr + base, mask=ok, other=0.0).to(tl.float32)
    tl.store(sum_ptr + base, s.to(sum_ptr.dtype.element_ty), mask=ok)
    scale = 1.0 / tl.sqrt(tl.sum(s * s, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + col, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + base, (s * scale * w).to(y_ptr.dtype.element_ty), mask=ok)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    rows, cols = x.shape
    summed = torch.empty_like(x)
    y = torch.empty_like(x)
    add_rms_norm_kernel[(rows,)](
        x, residual, weight, summed, y, cols, x.stride(0), eps, BLOCK=triton.next_power_of_2(cols)
    )
    return y, summed
