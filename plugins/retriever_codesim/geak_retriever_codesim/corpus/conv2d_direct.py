"""Direct 2-D convolution in NCHW layout with stride 1 and symmetric zero
padding: each program computes one output channel's BLOCK_H x BLOCK_W
spatial tile for one image, looping over input channels and the KH x KW
filter taps (unrolled with tl.static_range), loading a shifted input tile
with boundary masks and adding it times the scalar weight. Simple and
exact in float32; real workloads map convolution to implicit GEMM with
tl.dot instead."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    C_in,
    H,
    W,
    C_out,
    H_out,
    W_out,
    KH: tl.constexpr,
    KW: tl.constexpr,
    PAD: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_W: tl.constexpr,
):
    img = tl.program_id(0) // C_out
    oc = tl.program_id(0) % C_out
    oh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    ow = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    acc = tl.zeros((BLOCK_H, BLOCK_W), tl.float32)
    for ic in range(0, C_in):
        plane = x_ptr + (img * C_in + ic) * H * W
        for kh in tl.static_range(KH):
            for kw in tl.static_range(KW):
                ih = oh + kh - PAD
                iw = ow + kw - PAD
                ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                tap = tl.load(w_ptr + ((oc * C_in + ic) * KH + kh) * KW + kw)
                acc += tl.load(plane + ih * W + iw, mask=ok, other=0.0).to(tl.float32) * tap
    out_ok = (oh < H_out) & (ow < W_out)
    tl.store(
        y_ptr + ((img * C_out + oc) * H_out + oh) * W_out + ow,
        acc.to(y_ptr.dtype.element_ty),
        mask=out_ok,
    )


def conv2d(x: torch.Tensor, w: torch.Tensor, padding: int = 0):
    n, c_in, h, wd = x.shape
    c_out, _, kh, kw = w.shape
    h_out, w_out = h + 2 * padding - kh + 1, wd + 2 * padding - kw + 1
    y = torch.empty((n, c_out, h_out, w_out), dtype=x.dtype)
    grid = (n * c_out, triton.cdiv(h_out, 8), triton.cdiv(w_out, 8))
    conv2d_kernel[grid](
        x, w, y, c_in, h, wd, c_out, h_out, w_out, KH=kh, KW=kw, PAD=padding, BLOCK_H=8, BLOCK_W=8
    )
    return y
