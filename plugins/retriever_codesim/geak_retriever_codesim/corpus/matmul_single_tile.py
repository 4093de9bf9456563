"""Loop-free GEMM for problems that fit in one tile: a single program loads
all of A (M x K) and B (K x N) through block pointers, performs one tl.dot
and writes C, either through a block pointer (the "TMA-style" epilogue) or
through an ordinary pointer grid, optionally narrowing the float32 result to
fp16. Also shows the smallest tl.dot use, squaring a 16 x 16 matrix in place
(Z = Z @ Z), where every dimension sits at the 16 minimum of tl.dot."""

import torch
import triton
import triton.language as tl


@triton.jit
def one_tile_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    FP16_OUT: tl.constexpr,
    BLOCK_PTR_STORE: tl.constexpr,
):
    a = tl.load(tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (0, 0), (BM, BK), (1, 0)))
    b = tl.load(tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, 0), (BK, BN), (0, 1)))
    c = tl.dot(a, b)
    if FP16_OUT:
        c = c.to(tl.float16)
    if BLOCK_PTR_STORE:
        tl.store(
            tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (0, 0), (BM, BN), (1, 0)), c
        )
    else:
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c)


@triton.jit
def square_in_place_kernel(z_ptr):
    idx = tl.arange(0, 16)
    grid = idx[:, None] * 16 + idx[None, :]
    z = tl.load(z_ptr + grid)
    tl.store(z_ptr + grid, tl.dot(z, z))


def one_tile_matmul(a: torch.Tensor, b: torch.Tensor, fp16_out=False, block_ptr_store=True):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=torch.float16 if fp16_out else torch.float32)
    one_tile_matmul_kernel[(1,)](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BM=M,
        BN=N,
        BK=K,
        FP16_OUT=fp16_out,
        BLOCK_PTR_STORE=block_ptr_store,
    )
    return c


def square_in_place(z: torch.Tensor):
    square_in_place_kernel[(1,)](z)
    return z
