"""Reference for rocm/test_randn: X[i] = tl.rand(seed, i), 1024 elements per program."""

import triton
import triton.language as tl

BLOCK = tl.constexpr(1024)


@triton.jit
def randn_kernel_runtime_seed(X, N, seed, dtype: tl.constexpr):
    offsets = tl.program_id(0).to(dtype) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offsets, tl.rand(seed, offsets), mask=offsets < N)


@triton.jit
def randn_kernel_const_seed(X, N, seed: tl.constexpr, dtype: tl.constexpr):
    offsets = tl.program_id(0).to(dtype) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offsets, tl.rand(seed, offsets), mask=offsets < N)
