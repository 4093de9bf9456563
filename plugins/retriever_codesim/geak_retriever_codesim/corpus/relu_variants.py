"""A family of rectifier activations chosen at compile time by a constexpr
string: "relu" max(x, 0), "leaky" (x if x > 0 else slope * x) and "relu6"
min(max(x, 0), 6). Branches on a tl.constexpr are resolved when the kernel is
compiled, so each variant is its own specialised binary with no runtime
branch. Elementwise over a flat tensor with a masked tail, using tl.where,
tl.maximum and tl.minimum."""

import torch
import triton
import triton.language as tl


@triton.jit
def rectifier_kernel(src, dst, numel, slope, KIND: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < numel
    v = tl.load(src + i, mask=m)
    if KIND == "relu":
        r = tl.maximum(v, 0.0)
    elif KIND == "leaky":
        r = tl.where(v > 0, v, v * slope)
    else:
        r = tl.minimum(tl.maximum(v, 0.0), 6.0)
    tl.store(dst + i, r, mask=m)


def rectify(x: torch.Tensor, kind: str = "relu", slope: float = 0.01):
    out = torch.empty_like(x)
    numel = x.numel()
    rectifier_kernel[(triton.cdiv(numel, 128),)](x, out, numel, slope, KIND=kind, BLOCK=128)
    return out
