"""Reference for rocm/test_gemm_no_scf: loop-free C = A @ B for one tile."""

import triton
import triton.language as tl


@triton.jit
def matmul_no_scf_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                         stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         FLOAT16_OUTPUT: tl.constexpr, USE_TMA_EPILOGUE: tl.constexpr):
    a_block = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_block = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, 0), block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    c = tl.dot(tl.load(a_block), tl.load(b_block))
    if FLOAT16_OUTPUT:
        c = c.to(tl.float16)
    if USE_TMA_EPILOGUE:
        c_block = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                    offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N),
                                    order=(1, 0))
        tl.store(c_block, c)
    else:
        rm = tl.arange(0, BLOCK_M)
        rn = tl.arange(0, BLOCK_N)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c)
