"""Row log-softmax, log p = x - max - log(sum(exp(x - max))), computed as a
log-sum-exp so that very negative log-probabilities stay finite where
log(softmax(x)) would underflow to -inf. One program per row with the row in
a single block; the log-sum-exp of each row is also returned, which is what
a cross-entropy or attention backward pass needs."""

import torch
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, lse_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=ok, other=float("-inf")).to(tl.float32)
    top = tl.max(x, axis=0)
    lse = top + tl.log(tl.sum(tl.exp(x - top), axis=0))
    tl.store(lse_ptr + row, lse)
    tl.store(out_ptr + row * stride + cols, (x - lse).to(out_ptr.dtype.element_ty), mask=ok)


def log_softmax(x: torch.Tensor):
    rows, cols = x.shape
    out = torch.empty_like(x)
    lse = torch.empty(rows, dtype=torch.float32)
    log_softmax_kernel[(rows,)](x, out, lse, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out, lse
