"""Reference for rocm/test_chained_dot_fp8: O = quant(quant(Q @ K^T * s_scale) @ V^T * acc_scale).

One program owns BLOCK_M query rows of one batch and streams K and V in
BLOCK_N slices; the intermediate is rounded to V's dtype (scaled first when
USE_FP8) before the second product. Each tensor is offset by its own batch
stride.

On a GPU the intermediate and the result are converted to fp8 by the
hardware (round to nearest even), as in the original. The CPU interpreter's
fp32 -> fp8 conversion truncates instead, so there the values are first
rounded to the fp8 grid in float32 arithmetic, which makes the conversion
exact and gives the GPU's result.
"""

import os

import triton
import triton.language as tl

INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")


@triton.jit
def _round_to_fp8_grid(x, MANTISSA_BITS: tl.constexpr, MIN_EXPONENT: tl.constexpr):
    """Round float32 x to the fp8 value grid (ties to even); the result is still float32."""
    bits = x.to(tl.int32, bitcast=True)
    exponent = tl.maximum(((bits >> 23) & 0xFF) - 127, MIN_EXPONENT)
    # Adding 1.5 * 2^23 * quantum makes float32's own rounding snap |x| to the quantum.
    magic = ((exponent - MANTISSA_BITS + 150) << 23).to(tl.float32, bitcast=True) * 1.5
    snapped = (tl.abs(x) + magic) - magic
    return tl.where(x < 0, -snapped, snapped)


@triton.jit
def _chained_dot(
    Q, K, V, Out, q_desc, k_desc, v_desc, s_sc, s_desc, o_sc, stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd, stride_vz, stride_vd, stride_vn, stride_oz, stride_om,
    stride_od, Z, M, N, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    USE_FP8: tl.constexpr,
):
    pid_m = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < M

    q_ptrs = Q + batch * stride_qz + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=row_ok[:, None], other=0.0)
    kt_ptrs = K + batch * stride_kz + offs_d[:, None] * stride_kd + offs_n[None, :] * stride_kn
    v_ptrs = V + batch * stride_vz + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd
    mid_ty = V.dtype.element_ty
    # e4m3: 3 mantissa bits; smallest normal exponent -6 (OCP) or -7 (fnuz).
    MIN_EXPONENT: tl.constexpr = -7 if mid_ty == tl.float8e4b8 else -6
    s_scale = q_desc * k_desc * s_sc

    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        col_ok = start + offs_n < N
        kt = tl.load(kt_ptrs, mask=col_ok[None, :], other=0.0)
        s = tl.dot(q, kt)
        if USE_FP8:
            s = s * s_scale
            if INTERPRETED:
                s = _round_to_fp8_grid(s, 3, MIN_EXPONENT)
        v = tl.load(v_ptrs, mask=col_ok[:, None], other=0.0)
        acc = tl.dot(s.to(mid_ty), v, acc)
        kt_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn

    if USE_FP8:
        acc = acc * (s_desc * v_desc * o_sc)
        if INTERPRETED:
            acc = _round_to_fp8_grid(acc, 3, MIN_EXPONENT)
    o_ptrs = Out + batch * stride_oz + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=row_ok[:, None])
