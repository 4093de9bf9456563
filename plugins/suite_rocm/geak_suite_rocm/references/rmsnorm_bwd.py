"""Reference for rocm/rmsnorm_bwd: dx and per-row dg of RMSNorm, given x, gamma, rsigma and dy.

Persistent: NUM_PRGMS programs stride over the rows. Per row,
dx = r * dy * gamma - r^3 * x * sum(dy * gamma * x) / n_cols and
dg_row = dy * x * r. A row that fits in one block of at most 4096 elements
stays in registers; longer rows (USE_BLOCKED, or a BLOCK_SIZE too large for
registers) are read twice in 4096-element chunks: the row sum, then dx and dg.
"""

import triton
import triton.language as tl


@triton.jit
def rms_bwd_kernel(
    grad_output_ptr, input_ptr, g_ptr, rsigma_ptr, dx_ptr, dg_ptr, input_row_stride,
    output_row_stride, n_rows, n_cols, ZERO_CENTERED_GAMMA: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, USE_BLOCKED: tl.constexpr, NUM_PRGMS: tl.constexpr,
):
    CHUNK: tl.constexpr = min(BLOCK_SIZE, 4096)
    LOOPED: tl.constexpr = USE_BLOCKED or BLOCK_SIZE > CHUNK
    pid = tl.program_id(0)
    cols = tl.arange(0, CHUNK)
    dx_ty = dx_ptr.dtype.element_ty
    for row in range(pid, n_rows, NUM_PRGMS):
        x_row = input_ptr + row * input_row_stride
        dy_row = grad_output_ptr + row * output_row_stride
        dx_row = dx_ptr + row * input_row_stride
        dg_row = dg_ptr + row * input_row_stride
        r = tl.load(rsigma_ptr + row)
        if LOOPED:
            acc = tl.zeros([CHUNK], tl.float32)
            for start in range(0, n_cols, CHUNK):
                offs = start + cols
                m = offs < n_cols
                x = tl.load(x_row + offs, mask=m, other=0.0).to(tl.float32)
                dy = tl.load(dy_row + offs, mask=m, other=0.0).to(tl.float32)
                g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
                if ZERO_CENTERED_GAMMA:
                    g += 1.0
                acc += dy * g * x
            coef = r * r * r * tl.sum(acc, axis=0) / n_cols
            for start in range(0, n_cols, CHUNK):
                offs = start + cols
                m = offs < n_cols
                x = tl.load(x_row + offs, mask=m, other=0.0).to(tl.float32)
                dy = tl.load(dy_row + offs, mask=m, other=0.0).to(tl.float32)
                g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
                if ZERO_CENTERED_GAMMA:
                    g += 1.0
                tl.store(dx_row + offs, (r * dy * g - coef * x).to(dx_ty), mask=m)
                tl.store(dg_row + offs, dy * x * r, mask=m)
        else:
            m = cols < n_cols
            x = tl.load(x_row + cols, mask=m, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + cols, mask=m, other=0.0).to(tl.float32)
            g = tl.load(g_ptr + cols, mask=m, other=0.0).to(tl.float32)
            if ZERO_CENTERED_GAMMA:
                g += 1.0
            coef = r * r * r * tl.sum(dy * g * x, axis=0) / n_cols
            tl.store(dx_row + cols, (r * dy * g - coef * x).to(dx_ty), mask=m)
            tl.store(dg_row + cols, dy * x * r, mask=m)
