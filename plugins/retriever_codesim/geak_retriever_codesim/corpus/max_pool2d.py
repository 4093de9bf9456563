"""2-D max pooling over NCHW input with a square window, stride equal to the
window (non-overlapping) by default and no padding: each program produces a
BLOCK_H x BLOCK_W tile of one (image, channel) output plane, reading the
KxK window taps with tl.static_range and keeping a running tl.maximum
initialised to -inf. Output sizes follow floor((H - K) / S) + 1, so partial
windows at the border are dropped like torch's default."""

import torch
import triton
import triton.language as tl


@triton.jit
def max_pool2d_kernel(
    x_ptr,
    y_ptr,
    H,
    W,
    H_out,
    W_out,
    K: tl.constexpr,
    S: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    plane = tl.program_id(0)
    oh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    ow = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    ok = (oh < H_out) & (ow < W_out)
    best = tl.full((BLOCK_H, BLOCK_W), float("-inf"), tl.float32)
    for dh in tl.static_range(K):
        for dw in tl.static_range(K):
            v = tl.load(
                x_ptr + plane * H * W + (oh * S + dh) * W + (ow * S + dw),
                mask=ok,
                other=float("-inf"),
            )
            best = tl.maximum(best, v.to(tl.float32))
    tl.store(
        y_ptr + plane * H_out * W_out + oh * W_out + ow, best.to(y_ptr.dtype.element_ty), mask=ok
    )


def max_pool2d(x: torch.Tensor, kernel: int, stride=None):
    stride = stride or kernel
    n, c, h, w = x.shape
    h_out, w_out = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    y = torch.empty((n, c, h_out, w_out), dtype=x.dtype)
    grid = (n * c, triton.cdiv(h_out, 8), triton.cdiv(w_out, 8))
    max_pool2d_kernel[grid](x, y, h, w, h_out, w_out, K=kernel, S=stride, BLOCK_H=8, BLOCK_W=8)
    return y
