"""Mean and (biased) variance of every row with a numerically stable
chunked update: each chunk's count, mean and sum of squared deviations are
merged into the running totals with Chan's parallel formula
(delta = m_b - m_a; m = m_a + delta * n_b / n; M2 = M2_a + M2_b + delta^2 *
n_a * n_b / n), which avoids the catastrophic cancellation of
E[x^2] - E[x]^2 when the mean is large compared with the spread."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_moments_kernel(x_ptr, mean_ptr, var_ptr, n_cols, stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        valid = cols < n_cols
        v = tl.load(x_ptr + row * stride + cols, mask=valid, other=0.0).to(tl.float32)
        n_b = tl.sum(valid.to(tl.float32), axis=0)
        mean_b = tl.sum(v, axis=0) / n_b
        dev = tl.where(valid, v - mean_b, 0.0)
        m2_b = tl.sum(dev * dev, axis=0)
        total = count + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / total
        m2 = m2 + m2_b + delta * delta * count * n_b / total
        count = total
    tl.store(mean_ptr + row, mean)
    tl.store(var_ptr + row, m2 / count)


def row_moments(x: torch.Tensor):
    rows, cols = x.shape
    mean = torch.empty(rows, dtype=torch.float32)
    var = torch.empty(rows, dtype=torch.float32)
    row_moments_kernel[(rows,)](x, mean, var, cols, x.stride(0), CHUNK=32)
    return mean, var
