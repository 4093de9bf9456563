"""Mixture-of-experts GEMM: every (token, slot) pair routed by top-k gating is
multiplied by its expert's weight matrix, out[t, s] = x[t] @ W[e(t, s)]^T,
optionally scaled by the routing weight. The host sorts the token-slot pairs
by expert and pads each expert's run to a multiple of BLOCK_M with an
out-of-range sentinel, recording one expert id per block; each program then
handles BLOCK_M pairs that share one expert and a BLOCK_N slice of the
output, gathering token rows of x and skipping sentinel rows by mask. This
"grouped GEMM by alignment" is how fused MoE layers avoid one launch per
expert."""

import torch
import triton
import triton.language as tl


@triton.jit
def moe_matmul_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    pair_ids_ptr,
    block_expert_ptr,
    route_w_ptr,
    n_pairs,
    N,
    K,
    top_k,
    stride_xt,
    stride_we,
    stride_wn,
    stride_on,
    SCALE_BY_ROUTE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    blk = tl.program_id(0)
    pairs = tl.load(pair_ids_ptr + blk * BLOCK_M + tl.arange(0, BLOCK_M))
    real = pairs < n_pairs
    tokens = pairs // top_k
    expert = tl.load(block_expert_ptr + blk)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(
            x_ptr + tokens[:, None] * stride_xt + rk[None, :],
            mask=real[:, None] & (rk[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            w_ptr + expert * stride_we + rn[None, :] * stride_wn + rk[:, None],
            mask=(rn[None, :] < N) & (rk[:, None] < K),
            other=0.0,
        )
        acc = tl.dot(x, w, acc)
    if SCALE_BY_ROUTE:
        acc *= tl.load(route_w_ptr + pairs, mask=real, other=0.0)[:, None]
    tl.store(
        out_ptr + pairs[:, None] * stride_on + rn[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=real[:, None] & (rn[None, :] < N),
    )


def align_by_expert(topk_ids: torch.Tensor, n_experts: int, block_m: int):
    """Pair ids sorted by expert, each expert's run padded to block_m; one expert id per block."""
    flat = topk_ids.reshape(-1)
    n_pairs = flat.numel()
    ids, experts = [], []
    for e in range(n_experts):
        mine = torch.nonzero(flat == e).reshape(-1)
        if mine.numel() == 0:
            continue
        padded = -(-mine.numel() // block_m) * block_m
        ids.append(torch.cat([mine, torch.full((padded - mine.numel(),), n_pairs)]))
        experts += [e] * (padded // block_m)
    return torch.cat(ids).to(torch.int32), torch.tensor(experts, dtype=torch.int32)


def moe_matmul(x: torch.Tensor, w: torch.Tensor, topk_ids: torch.Tensor, topk_weights=None):
    tokens, K = x.shape
    n_experts, N, _ = w.shape
    top_k = topk_ids.shape[1]
    block_m = 16
    pair_ids, block_expert = align_by_expert(topk_ids, n_experts, block_m)
    out = torch.zeros((tokens, top_k, N), dtype=x.dtype)
    route = topk_weights.reshape(-1) if topk_weights is not None else None
    grid = (block_expert.numel(), triton.cdiv(N, 32))
    moe_matmul_kernel[grid](
        x,
        w,
        out,
        pair_ids,
        block_expert,
        route,
        tokens * top_k,
        N,
        K,
        top_k,
        x.stride(0),
        w.stride(0),
        w.stride(1),
        out.stride(1),
        SCALE_BY_ROUTE=topk_weights is not None,
        BLOCK_M=block_m,
        BLOCK_N=32,
        BLOCK_K=16,
    )
    return out
