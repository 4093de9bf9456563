"""Reference for rocm/test_flashattention_fwd: causal attention forward with an online softmax.

Scores are kept in base-2 units (scaled by sm_scale * log2(e)) so the exponentials are exp2;
M is converted back to natural units when stored. Key blocks strictly below the diagonal need
no causal mask; only the diagonal blocks pay for it.
"""

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vk, stride_vn,
            qk_scale, offs_m, lo, hi, BLOCK_DMODEL: tl.constexpr, BLOCK_N: tl.constexpr,
            CAUSAL_MASK: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_DMODEL)
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        k = tl.load(k_base + keys[None, :] * stride_kn + offs_d[:, None] * stride_kk)
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL_MASK:
            qk = tl.where(offs_m[:, None] >= keys[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + keys[:, None] * stride_vk + offs_d[None, :] * stride_vn)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def flash_fwd_kernel(Q, K, V, sm_scale, L, M, Out, stride_qz, stride_qh, stride_qm, stride_qk,
                     stride_kz, stride_kh, stride_kn, stride_kk, stride_vz, stride_vh,
                     stride_vk, stride_vn, stride_oz, stride_oh, stride_om, stride_on, Z, H,
                     N_CTX, D0, BLOCK_M: tl.constexpr, BLOCK_DMODEL: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = (off_hz // H).to(tl.int64)
    off_h = (off_hz % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_DMODEL)

    q = tl.load(Q + off_z * stride_qz + off_h * stride_qh
                + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk)
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    qk_scale = sm_scale * LOG2E

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DMODEL], dtype=tl.float32)
    diagonal = start_m * BLOCK_M
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vk,
                            stride_vn, qk_scale, offs_m, 0, diagonal, BLOCK_DMODEL, BLOCK_N,
                            False)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vk,
                            stride_vn, qk_scale, offs_m, diagonal, diagonal + BLOCK_M,
                            BLOCK_DMODEL, BLOCK_N, True)

    row = off_hz * N_CTX + offs_m
    tl.store(L + row, l_i)
    tl.store(M + row, m_i * LN2)
    out = acc / l_i[:, None]
    tl.store(Out + off_z * stride_oz + off_h * stride_oh
             + offs_m[:, None] * stride_om + offs_d[None, :] * stride_on,
             out.to(Out.dtype.element_ty))
