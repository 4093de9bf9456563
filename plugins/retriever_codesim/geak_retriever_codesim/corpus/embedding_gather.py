"""Embedding lookup (row gather): out[i, :] = table[ids[i], :]. Each program
handles BLOCK_T token ids and a BLOCK_D slice of the embedding dimension,
loads the ids as a vector, and gathers a 2-D tile whose row addresses come
from the ids (pointer arithmetic with a loaded index tensor). Ids are
widened to int64 before multiplying by the row stride so large tables do
not overflow 32-bit offsets."""

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_gather_kernel(
    ids_ptr,
    table_ptr,
    out_ptr,
    n_ids,
    dim,
    stride_table,
    stride_out,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(ids_ptr + t, mask=t < n_ids, other=0).to(tl.int64)
    ok = (t[:, None] < n_ids) & (d[None, :] < dim)
    rows = tl.load(table_ptr + ids[:, None] * stride_table + d[None, :], mask=ok)
    tl.store(out_ptr + t[:, None] * stride_out + d[None, :], rows, mask=ok)


def embedding_gather(ids: torch.Tensor, table: torch.Tensor):
    n, dim = ids.numel(), table.shape[1]
    out = torch.empty((n, dim), dtype=table.dtype)
    grid = (triton.cdiv(n, 8), triton.cdiv(dim, 32))
    embedding_gather_kernel[grid](
        ids, table, out, n, dim, table.stride(0), out.stride(0), BLOCK_T=8, BLOCK_D=32
    )
    return out
