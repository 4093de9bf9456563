"""GELU activation over a flat tensor, in either the exact form
0.5 * x * (1 + erf(x / sqrt(2))) or the tanh approximation
0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), picked by a constexpr
flag. Math is done in float32 whatever the storage dtype (fp16/bf16 inputs
are upcast after the load and cast back at the store); tanh is expressed
through tl.sigmoid, tanh(u) = 2 * sigmoid(2u) - 1."""

import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, APPROXIMATE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    x = tl.load(x_ptr + offs, mask=valid).to(tl.float32)
    if APPROXIMATE:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
        y = 0.5 * x * (1.0 + t)
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=valid)


def gelu(x: torch.Tensor, approximate: bool = False):
    y = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, 256),)](x, y, n, APPROXIMATE=approximate, BLOCK=256)
    return y
