"""Reference for rocm/rmsnorm_fwd: y = x * rsqrt(mean(x^2) + eps) * gamma, plus rsigma.

Persistent: NUM_PRGMS programs stride over the rows. A row that fits in one
block stays in registers; with USE_BLOCKED the row is read twice (sum of
squares, then normalise).
"""

import triton
import triton.language as tl


@triton.jit
def rms_kernel(
    output_ptr, input_ptr, g_ptr, rsigma_ptr, input_row_stride, output_row_stride, n_rows,
    n_cols, epsilon, ZERO_CENTERED_GAMMA: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    USE_BLOCKED: tl.constexpr, NUM_PRGMS: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    out_ty = output_ptr.dtype.element_ty
    for row in range(pid, n_rows, NUM_PRGMS):
        x_row = input_ptr + row * input_row_stride
        y_row = output_ptr + row * output_row_stride
        if USE_BLOCKED:
            acc = tl.zeros([BLOCK_SIZE], tl.float32)
            for start in range(0, n_cols, BLOCK_SIZE):
                offs = start + cols
                x = tl.load(x_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
                acc += x * x
            rsigma = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            for start in range(0, n_cols, BLOCK_SIZE):
                offs = start + cols
                m = offs < n_cols
                x = tl.load(x_row + offs, mask=m, other=0.0).to(tl.float32)
                g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
                if ZERO_CENTERED_GAMMA:
                    g += 1.0
                tl.store(y_row + offs, (x * rsigma * g).to(out_ty), mask=m)
        else:
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            rsigma = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            # gamma is re-read per row (it stays in cache) rather than pinned in registers.
            g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            if ZERO_CENTERED_GAMMA:
                g += 1.0
            tl.store(y_row + cols, (x * rsigma * g).to(out_ty), mask=mask)
