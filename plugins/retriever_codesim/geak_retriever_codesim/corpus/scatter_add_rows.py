"""Scatter-add of rows (index_add / the backward of an embedding lookup):
out[index[i], :] += src[i, :]. Several source rows may target the same
destination row, so the update uses tl.atomic_add on a 2-D tile of
pointers built from the loaded index vector; masked lanes perform no
atomic. Accumulate in float32 for determinism of magnitude (the summation
order still varies between runs)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scatter_add_rows_kernel(
    src_ptr,
    index_ptr,
    out_ptr,
    n_src,
    dim,
    stride_src,
    stride_out,
    BLOCK_R: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ok = (r[:, None] < n_src) & (d[None, :] < dim)
    dest = tl.load(index_ptr + r, mask=r < n_src, other=0).to(tl.int64)
    vals = tl.load(src_ptr + r[:, None] * stride_src + d[None, :], mask=ok, other=0.0)
    tl.atomic_add(out_ptr + dest[:, None] * stride_out + d[None, :], vals, mask=ok)


def scatter_add_rows(src: torch.Tensor, index: torch.Tensor, n_out: int):
    n, dim = src.shape
    out = torch.zeros((n_out, dim), dtype=torch.float32)
    grid = (triton.cdiv(n, 8), triton.cdiv(dim, 32))
    scatter_add_rows_kernel[grid](
        src, index, out, n, dim, src.stride(0), out.stride(0), BLOCK_R=8, BLOCK_D=32
    )
    return out
