"""Reference for rocm/test_flashattention_fwd: causal attention forward with an online softmax.

The original's algorithm, kept so that speedups compare with published ones. Q, K, V and Out
are addressed as one (Z * H * N_CTX, BLOCK_DMODEL) matrix each through block pointers (a
head's rows start at off_hz * N_CTX). Program (start_m, off_hz) holds its BLOCK_M query rows
and walks the key blocks from 0 to the end of its own block (causal), applying the causal
mask to every block; per block it rescales in natural units (``exp``): the new row maximum,
the old normaliser scaled down, the probabilities divided by the new normaliser at once and
the accumulator rescaled to match, so the accumulator is always normalised. L holds the
normaliser and M the row maximum, both in natural units.

A faster variant (masking only the diagonal blocks, ``exp2``, one division at the end) took
27 % less time than the original on an H100, which made speedups against this reference mean
something else than GEAK's.
"""

import triton
import triton.language as tl


@triton.jit
def flash_fwd_kernel(Q, K, V, sm_scale, L, M, Out, stride_qz, stride_qh, stride_qm, stride_qk,
                     stride_kz, stride_kh, stride_kn, stride_kk, stride_vz, stride_vh,
                     stride_vk, stride_vn, stride_oz, stride_oh, stride_om, stride_on, Z, H,
                     N_CTX, D0, BLOCK_M: tl.constexpr, BLOCK_DMODEL: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_prev = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_prev = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DMODEL], dtype=tl.float32)
    head_rows = stride_qh // stride_qm // stride_qk  # N_CTX for contiguous inputs

    q_block = tl.make_block_ptr(Q, (D0, BLOCK_DMODEL), (stride_qm, stride_qk),
                                (off_hz * head_rows + start_m * BLOCK_M, 0),
                                (BLOCK_M, BLOCK_DMODEL), (1, 0))
    k_block = tl.make_block_ptr(K, (D0, BLOCK_DMODEL), (stride_kn, stride_kk),
                                (off_hz * head_rows, 0), (BLOCK_N, BLOCK_DMODEL), (1, 0))
    v_block = tl.make_block_ptr(V, (D0, BLOCK_DMODEL), (stride_vk, stride_vn),
                                (off_hz * head_rows, 0), (BLOCK_N, BLOCK_DMODEL), (1, 0))
    q = tl.load(q_block)
    for start_n in range(0, (start_m + 1) * BLOCK_M, BLOCK_N):
        k = tl.load(k_block, boundary_check=(0, 1))
        scores = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        scores += tl.dot(q, tl.trans(k))
        scores *= sm_scale
        scores = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), scores, float("-inf"))
        m_curr = tl.maximum(tl.max(scores, 1), m_prev)
        l_prev *= tl.exp(m_prev - m_curr)
        p = tl.exp(scores - m_curr[:, None])
        l_curr = tl.sum(p, 1) + l_prev
        inverse = 1.0 / l_curr
        p *= inverse[:, None]
        acc *= (l_prev * inverse)[:, None]
        v = tl.load(v_block, boundary_check=(0, 1))
        acc += tl.dot(p.to(tl.float16), v)
        l_prev = l_curr
        m_prev = m_curr
        k_block = tl.advance(k_block, [BLOCK_N, 0])
        v_block = tl.advance(v_block, [BLOCK_N, 0])

    rows = off_hz * N_CTX + offs_m
    tl.store(L + rows, l_prev)
    tl.store(M + rows, m_prev)
    out_block = tl.make_block_ptr(Out, (D0, BLOCK_DMODEL), (stride_om, stride_on),
                                  (off_hz * head_rows + start_m * BLOCK_M, 0),
                                  (BLOCK_M, BLOCK_DMODEL), (1, 0))
    tl.store(out_block, acc.to(Out.dtype.element_ty), boundary_check=(0, 1))
