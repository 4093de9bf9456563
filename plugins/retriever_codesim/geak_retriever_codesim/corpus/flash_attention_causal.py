"""Causal flash-attention forward for (batch * heads, seq, head_dim) tensors:
each program takes BLOCK_M queries of one head and streams key/value blocks
up to the diagonal, keeping a running row maximum m, running normaliser l
and an unnormalised output accumulator (online softmax), rescaled by
exp2(m_old - m_new) whenever the maximum grows. Scores use exp2 with the
softmax scale folded into log2(e); keys beyond the query position are
masked to -inf. The N x N score matrix is never stored; the log-sum-exp of
each query row is written for a backward pass."""

import torch
import triton
import triton.language as tl


@triton.jit
def causal_attention_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    sm_scale,
    seq_len,
    stride_h,
    stride_s,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    head = tl.program_id(1)
    q_pos = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    base = head * stride_h
    q = tl.load(
        q_ptr + base + q_pos[:, None] * stride_s + d[None, :],
        mask=q_pos[:, None] < seq_len,
        other=0.0,
    )
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    hi = tl.minimum((tl.program_id(0) + 1) * BLOCK_M, seq_len)
    for start in range(0, hi, BLOCK_N):
        k_pos = start + tl.arange(0, BLOCK_N)
        kv_ok = k_pos[:, None] < seq_len
        k = tl.load(k_ptr + base + k_pos[:, None] * stride_s + d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + base + k_pos[:, None] * stride_s + d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(k_pos[None, :] <= q_pos[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        o_ptr + base + q_pos[:, None] * stride_s + d[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=q_pos[:, None] < seq_len,
    )
    tl.store(
        lse_ptr + head * seq_len + q_pos,
        (m_i + tl.log2(l_i)) / 1.4426950408889634,
        mask=q_pos < seq_len,
    )


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float):
    """q, k, v: (batch, heads, seq, head_dim), contiguous."""
    batch, heads, seq, dim = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((batch * heads, seq), dtype=torch.float32)
    grid = (triton.cdiv(seq, 16), batch * heads)
    causal_attention_fwd_kernel[grid](
        q,
        k,
        v,
        o,
        lse,
        sm_scale,
        seq,
        q.stride(1),
        q.stride(2),
        HEAD_DIM=dim,
        BLOCK_M=16,
        BLOCK_N=16,
    )
    return o, lse
