"""Reference for rocm/test_tma_store_gemm: C = A @ B for one tile, block-pointer load and store."""

import triton
import triton.language as tl


@triton.jit
def matmul_tma_load_store(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                          stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          OUTPUT_F16: tl.constexpr):
    a_block = tl.make_block_ptr(a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                                offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_block = tl.make_block_ptr(b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                                offsets=(0, 0), block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    c_block = tl.make_block_ptr(c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                                offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    acc = tl.dot(tl.load(a_block), tl.load(b_block))
    if OUTPUT_F16:
        tl.store(c_block, acc.to(tl.float16))
    else:
        tl.store(c_block, acc)
