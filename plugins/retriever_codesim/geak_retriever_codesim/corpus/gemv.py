"""Matrix-vector product y = W @ x for a row-major W of shape (N, K), the
memory-bound core of decoding with batch size one. Each program owns
BLOCK_N output rows and streams the K dimension in BLOCK_K chunks: it loads
a (BLOCK_N, BLOCK_K) tile of W and the matching chunk of x, multiplies with
a broadcast of x over the rows and reduces along K with tl.sum into a
float32 accumulator. No tl.dot: with a single column its minimum tile size
would waste most of the work, and W is read exactly once anyway."""

import torch
import triton
import triton.language as tl


@triton.jit
def gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < N
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        w = tl.load(
            w_ptr + rows[:, None] * stride_wn + ks[None, :],
            mask=row_ok[:, None] & k_ok[None, :],
            other=0.0,
        )
        x = tl.load(x_ptr + ks, mask=k_ok, other=0.0)
        acc += tl.sum(w.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    tl.store(y_ptr + rows, acc.to(y_ptr.dtype.element_ty), mask=row_ok)


def gemv(w: torch.Tensor, x: torch.Tensor):
    n, k = w.shape
    y = torch.empty(n, dtype=w.dtype)
    gemv_kernel[(triton.cdiv(n, 16),)](w, x, y, n, k, w.stride(0), BLOCK_N=16, BLOCK_K=32)
    return y
