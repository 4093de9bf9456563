"""Out-of-place 2-D transpose, out[j, i] = x[i, j], by square tiles: each
program loads a TILE x TILE block with coalesced reads along x's rows,
transposes it in registers with tl.trans, and writes it with coalesced
writes along out's rows (reading and writing with the same index order
would make one side strided). Masks handle matrices whose sides are not
tile multiples."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, rows, cols, stride_x, stride_out, TILE: tl.constexpr):
    r = tl.program_id(0) * TILE + tl.arange(0, TILE)
    c = tl.program_id(1) * TILE + tl.arange(0, TILE)
    tile = tl.load(
        x_ptr + r[:, None] * stride_x + c[None, :], mask=(r[:, None] < rows) & (c[None, :] < cols)
    )
    flipped = tl.trans(tile)
    tl.store(
        out_ptr + c[:, None] * stride_out + r[None, :],
        flipped,
        mask=(c[:, None] < cols) & (r[None, :] < rows),
    )


def transpose(x: torch.Tensor):
    rows, cols = x.shape
    out = torch.empty((cols, rows), dtype=x.dtype)
    grid = (triton.cdiv(rows, 16), triton.cdiv(cols, 16))
    transpose_kernel[grid](x, out, rows, cols, x.stride(0), out.stride(0), TILE=16)
    return out
