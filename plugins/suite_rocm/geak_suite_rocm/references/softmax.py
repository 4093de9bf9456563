"""Reference for rocm/softmax: row softmax, one program per row.

A row that fits in one block is loaded once and normalised in registers; longer
rows take an online pass (running max and rescaled sum) and a writing pass.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel_online(
    output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    row_in = input_ptr + row * input_row_stride
    row_out = output_ptr + row * output_row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    out_ty = output_ptr.dtype.element_ty

    if n_cols <= BLOCK_SIZE:
        mask = cols < n_cols
        x = tl.load(row_in + cols, mask=mask, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(row_out + cols, (e / tl.sum(e, axis=0)).to(out_ty), mask=mask)
    else:
        running_max = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
        running_sum = tl.zeros([BLOCK_SIZE], tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            offs = start + cols
            x = tl.load(row_in + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
            new_max = tl.maximum(running_max, x)
            safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
            running_sum = running_sum * tl.exp(running_max - safe_max) + tl.exp(x - safe_max)
            running_max = new_max
        row_max = tl.max(running_max, axis=0)
        inv_sum = 1.0 / tl.sum(running_sum * tl.exp(running_max - row_max), axis=0)
        for start in range(0, n_cols, BLOCK_SIZE):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(row_in + offs, mask=mask, other=float("-inf")).to(tl.float32)
            tl.store(row_out + offs, (tl.exp(x - row_max) * inv_sum).to(out_ty), mask=mask)
