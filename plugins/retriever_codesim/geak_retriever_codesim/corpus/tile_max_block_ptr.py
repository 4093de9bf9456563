"""Maximum along each row of a small matrix that fits in one tile, loaded in a
single shot through a block pointer: tl.make_block_ptr describes the whole
(rows, cols) matrix with its strides, tl.load with boundary_check pads the
tile past the matrix edge, and tl.max(axis=1) reduces each row. The zero
padding is replaced by -inf with tl.where before the reduction so a padded
lane never wins. One program handles the whole tile."""

import torch
import triton
import triton.language as tl


@triton.jit
def tile_row_max_kernel(
    src, dst, rows, cols, stride_r, stride_c, TILE_R: tl.constexpr, TILE_C: tl.constexpr
):
    tile_ptr = tl.make_block_ptr(
        base=src,
        shape=(rows, cols),
        strides=(stride_r, stride_c),
        offsets=(0, 0),
        block_shape=(TILE_R, TILE_C),
        order=(1, 0),
    )
    tile = tl.load(tile_ptr, boundary_check=(0, 1), padding_option="zero")
    c = tl.arange(0, TILE_C)
    tile = tl.where(c[None, :] < cols, tile, float("-inf"))
    best = tl.max(tile, axis=1)
    r = tl.arange(0, TILE_R)
    tl.store(dst + r, best, mask=r < rows)


def tile_row_max(x: torch.Tensor):
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype)
    tile_row_max_kernel[(1,)](
        x,
        out,
        rows,
        cols,
        x.stride(0),
        x.stride(1),
        TILE_R=triton.next_power_of_2(rows),
        TILE_C=triton.next_power_of_2(cols),
    )
    return out
