"""Per-tensor fp8 (e4m3) quantisation in two kernels: the first reduces
max|x| over the whole tensor with tl.atomic_max on a float32 scalar (valid
because absolute values are non-negative, so their float bit patterns order
like integers); the second divides by scale = amax / 448 (the largest finite
e4m3 value), clamps to +-448 and converts with .to(tl.float8e4nv). The
scale is returned so that consumers multiply it back (dequantise) after the
fp8 GEMM."""

import torch
import triton
import triton.language as tl

E4M3_MAX = 448.0


@triton.jit
def abs_max_kernel(x_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.abs(tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32))
    tl.atomic_max(amax_ptr, tl.max(v, axis=0))


@triton.jit
def cast_fp8_kernel(x_ptr, y_ptr, amax_ptr, n, FP8_MAX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    scale = tl.maximum(tl.load(amax_ptr), 1e-12) / FP8_MAX
    v = tl.load(x_ptr + offs, mask=ok, other=0.0).to(tl.float32) / scale
    v = tl.minimum(tl.maximum(v, -FP8_MAX), FP8_MAX)
    tl.store(y_ptr + offs, v.to(tl.float8e4nv), mask=ok)


def to_fp8(x: torch.Tensor):
    n = x.numel()
    amax = torch.zeros(1, dtype=torch.float32)
    y = torch.empty(x.shape, dtype=torch.float8_e4m3fn)
    grid = (triton.cdiv(n, 256),)
    abs_max_kernel[grid](x, amax, n, BLOCK=256)
    cast_fp8_kernel[grid](x, y, amax, n, FP8_MAX=E4M3_MAX, BLOCK=256)
    return y, amax[0] / E4M3_MAX
