"""Map of a grouped (swizzled) tile order: for every tile (i, j) of an
n_i x n_j grid, tl.swizzle2d(i, j, n_i, n_j, group) gives the position that
tile takes when tiles are visited column by column inside horizontal bands
of `group` rows, the L2-friendly schedule used by GEMM kernels. The kernel
evaluates it for a whole grid at once with vectorised index arithmetic and
writes, at each swizzled position, the tile's row-major id, so the schedule
can be inspected or compared with a host-side formula."""

import torch
import triton
import triton.language as tl


@triton.jit
def swizzle_map_kernel(out_ptr, n_i, n_j, group, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    i = tl.arange(0, BLOCK_I)[:, None] + tl.zeros((BLOCK_I, BLOCK_J), tl.int32)
    j = tl.arange(0, BLOCK_J)[None, :] + tl.zeros((BLOCK_I, BLOCK_J), tl.int32)
    si, sj = tl.swizzle2d(i, j, n_i, n_j, group)
    ok = (i < n_i) & (j < n_j)
    tl.store(out_ptr + si * n_j + sj, i * n_j + j, mask=ok)


def swizzle_map(n_i: int, n_j: int, group: int):
    out = torch.full((n_i, n_j), -1, dtype=torch.int32)
    swizzle_map_kernel[(1,)](
        out,
        n_i,
        n_j,
        group,
        BLOCK_I=triton.next_power_of_2(n_i),
        BLOCK_J=triton.next_power_of_2(n_j),
    )
    return out
