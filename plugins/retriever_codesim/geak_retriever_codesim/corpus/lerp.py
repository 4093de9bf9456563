"""Linear interpolation between two tensors with a per-element weight, like
torch.lerp(start, end, weight): out = start + weight * (end - start). Three
loads and one store per element, all masked at the ragged tail; the weight
may also be broadcast from a single value by passing a scalar instead of a
tensor (the kernel then reads it once through a constexpr switch). A
typical fused update, e.g. an exponential moving average of parameters."""

import torch
import triton
import triton.language as tl


@triton.jit
def lerp_kernel(
    start_ptr,
    end_ptr,
    weight_ptr,
    out_ptr,
    n,
    scalar_weight,
    WEIGHT_IS_TENSOR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    lo = tl.load(start_ptr + i, mask=m, other=0.0).to(tl.float32)
    hi = tl.load(end_ptr + i, mask=m, other=0.0).to(tl.float32)
    if WEIGHT_IS_TENSOR:
        w = tl.load(weight_ptr + i, mask=m, other=0.0).to(tl.float32)
    else:
        w = scalar_weight
    tl.store(out_ptr + i, (lo + w * (hi - lo)).to(out_ptr.dtype.element_ty), mask=m)


def lerp(start: torch.Tensor, end: torch.Tensor, weight):
    out = torch.empty_like(start)
    n = start.numel()
    is_tensor = isinstance(weight, torch.Tensor)
    lerp_kernel[(triton.cdiv(n, 128),)](
        start,
        end,
        weight if is_tensor else start,
        out,
        n,
        0.0 if is_tensor else float(weight),
        WEIGHT_IS_TENSOR=is_tensor,
        BLOCK=128,
    )
    return out
