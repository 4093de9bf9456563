"""Two chained dot products with quantised intermediate, the core of an fp8
attention-like pipeline without softmax: S = (Q @ K^T) * s_scale is rounded
to a low-precision type (float8 e4m3 when USE_FP8, else float16), then
O = S @ V * o_scale accumulates over key blocks in float32. Q is (B, M, D),
K and V are (B, N, D); the grid covers (row blocks, batch). The scales
are runtime floats that fold in the inputs' quantisation factors, keeping
the fp8 values in range; Q and K/V carry their own batch strides."""

import torch
import triton
import triton.language as tl


@triton.jit
def scaled_two_dot_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    s_scale,
    o_scale,
    M,
    N,
    stride_qb,
    stride_kb,
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    USE_FP8: tl.constexpr,
):
    batch = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, D)
    q = tl.load(
        q_ptr + batch * stride_qb + rows[:, None] * D + d[None, :],
        mask=rows[:, None] < M,
        other=0.0,
    )
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for n0 in range(0, N, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        k_t = tl.load(
            k_ptr + batch * stride_kb + keys[None, :] * D + d[:, None],
            mask=keys[None, :] < N,
            other=0.0,
        )
        s = tl.dot(q, k_t) * s_scale
        v = tl.load(
            v_ptr + batch * stride_kb + keys[:, None] * D + d[None, :],
            mask=keys[:, None] < N,
            other=0.0,
        )
        if USE_FP8:
            acc = tl.dot(s.to(tl.float8e4nv), v.to(tl.float8e4nv), acc)
        else:
            acc = tl.dot(s.to(tl.float16), v.to(tl.float16), acc)
    tl.store(
        o_ptr + batch * stride_qb + rows[:, None] * D + d[None, :],
        (acc * o_scale).to(o_ptr.dtype.element_ty),
        mask=rows[:, None] < M,
    )


def scaled_two_dot(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    s_scale: float,
    o_scale: float,
    use_fp8: bool = False,
):
    batch, M, D = q.shape
    N = k.shape[1]
    o = torch.empty((batch, M, D), dtype=torch.float32)
    grid = (triton.cdiv(M, 16), batch)
    scaled_two_dot_kernel[grid](
        q,
        k,
        v,
        o,
        s_scale,
        o_scale,
        M,
        N,
        q.stride(0),
        k.stride(0),
        D=D,
        BLOCK_M=16,
        BLOCK_N=16,
        USE_FP8=use_fp8,
    )
    return o
