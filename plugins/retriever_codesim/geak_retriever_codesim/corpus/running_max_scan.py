"""Cumulative maximum along each row (a scan with a custom operator): a
@triton.jit combine function returning tl.maximum(a, b) is handed to
tl.associative_scan, which runs the parallel prefix scan over the block;
any associative binary operator (max, min, product, logical or, a
(value, index) pair) works the same way. Rows are one block here; longer
rows would carry the previous chunk's last value as in a cumsum."""

import torch
import triton
import triton.language as tl


@triton.jit
def _take_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def running_max_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    v = tl.load(x_ptr + row * stride + cols, mask=ok, other=float("-inf"))
    tl.store(y_ptr + row * stride + cols, tl.associative_scan(v, 0, _take_max), mask=ok)


def running_max(x: torch.Tensor):
    rows, cols = x.shape
    y = torch.empty_like(x)
    running_max_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return y
