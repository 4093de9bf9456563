"""Direct 1-D convolution (cross-correlation, as in torch's conv1d) with
stride 1 and zero padding: input (B, C_in, L), weight (C_out, C_in, W),
output (B, C_out, L_out). Each program computes a BLOCK_O x BLOCK_L tile of
output channels by positions for one batch item, looping over input
channels and filter taps and accumulating outer products of a weight column
and a shifted input row in float32. Padding is handled by masking the
shifted positions that fall outside [0, L)."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    C_in,
    L,
    C_out,
    L_out,
    PAD: tl.constexpr,
    WIDTH: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    b = tl.program_id(0)
    oc = tl.program_id(1) * BLOCK_O + tl.arange(0, BLOCK_O)
    pos = tl.program_id(2) * BLOCK_L + tl.arange(0, BLOCK_L)
    acc = tl.zeros((BLOCK_O, BLOCK_L), tl.float32)
    for ic in range(0, C_in):
        for t in tl.static_range(WIDTH):
            src = pos + t - PAD
            xv = tl.load(x_ptr + (b * C_in + ic) * L + src, mask=(src >= 0) & (src < L), other=0.0)
            wv = tl.load(w_ptr + (oc * C_in + ic) * WIDTH + t, mask=oc < C_out, other=0.0)
            acc += wv[:, None].to(tl.float32) * xv[None, :].to(tl.float32)
    ok = (oc[:, None] < C_out) & (pos[None, :] < L_out)
    tl.store(
        y_ptr + (b * C_out + oc[:, None]) * L_out + pos[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=ok,
    )


def conv1d(x: torch.Tensor, w: torch.Tensor, padding: int = 0):
    batch, c_in, length = x.shape
    c_out, _, width = w.shape
    l_out = length + 2 * padding - width + 1
    y = torch.empty((batch, c_out, l_out), dtype=x.dtype)
    grid = (batch, triton.cdiv(c_out, 8), triton.cdiv(l_out, 32))
    conv1d_kernel[grid](
        x, w, y, c_in, length, c_out, l_out, PAD=padding, WIDTH=width, BLOCK_O=8, BLOCK_L=32
    )
    return y
