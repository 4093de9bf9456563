"""Reference for rocm/test_random_int: X[i] = tl.randint(seed, i), 1024 elements per program."""

import triton
import triton.language as tl

BLOCK = tl.constexpr(1024)


@triton.jit
def randint_kernel_runtime_seed(X, N, seed_val):
    offsets = tl.program_id(0).to(X.dtype.element_ty) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offsets, tl.randint(seed_val, offsets), mask=offsets < N)


@triton.jit
def randint_kernel_const_seed(X, N, seed_val: tl.constexpr):
    offsets = tl.program_id(0).to(X.dtype.element_ty) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offsets, tl.randint(seed_val, offsets), mask=offsets < N)
