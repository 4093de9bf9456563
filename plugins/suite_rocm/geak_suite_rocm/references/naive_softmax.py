"""Reference for rocm/naive_softmax: row softmax, one program per row.

Two sweeps over the row instead of the original three: an online pass keeps a
running maximum and a rescaled sum of exponentials, a second pass normalises.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel_naive(in_ptr, output_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_in = in_ptr + row * row_stride
    row_out = output_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)

    running_max = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
    running_sum = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(row_in + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, x)
        # Lanes that have only seen -inf keep a zero sum (avoid inf - inf).
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        running_sum = running_sum * tl.exp(running_max - safe_max) + tl.exp(x - safe_max)
        running_max = new_max

    row_max = tl.max(running_max, axis=0)
    row_sum = tl.sum(running_sum * tl.exp(running_max - row_max), axis=0)
    inv_sum = 1.0 / row_sum

    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(row_in + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) * inv_sum
        tl.store(row_out + offs, y.to(output_ptr.dtype.element_ty), mask=mask)
