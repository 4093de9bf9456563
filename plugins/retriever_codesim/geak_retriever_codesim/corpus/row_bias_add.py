"""Broadcast a per-column bias over a strided 2-D matrix and apply an optional
ReLU: out[i, j] = act(x[i, j] + bias[j]). The bias vector is loaded once per
column tile and broadcast with [None, :]; rows and columns are masked
separately and combined with &. A typical epilogue kernel (bias + activation
after a GEMM) that respects arbitrary row strides."""

import torch
import triton
import triton.language as tl


@triton.jit
def bias_act_kernel(
    x_ptr,
    bias_ptr,
    out_ptr,
    rows,
    cols,
    stride_xr,
    stride_or,
    RELU: tl.constexpr,
    BR: tl.constexpr,
    BC: tl.constexpr,
):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    rmask = r < rows
    cmask = c < cols
    bias = tl.load(bias_ptr + c, mask=cmask, other=0.0)
    tile = tl.load(
        x_ptr + r[:, None] * stride_xr + c[None, :], mask=rmask[:, None] & cmask[None, :]
    )
    val = tile + bias[None, :]
    if RELU:
        val = tl.maximum(val, 0.0)
    tl.store(
        out_ptr + r[:, None] * stride_or + c[None, :], val, mask=rmask[:, None] & cmask[None, :]
    )


def bias_act(x: torch.Tensor, bias: torch.Tensor, relu: bool = True):
    rows, cols = x.shape
    out = torch.empty((rows, cols), dtype=x.dtype)
    grid = (triton.cdiv(rows, 16), triton.cdiv(cols, 16))
    bias_act_kernel[grid](
        x, bias, out, rows, cols, x.stride(0), out.stride(0), RELU=relu, BR=16, BC=16
    )
    return out
