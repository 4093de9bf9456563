"""Reference for rocm/rmsnorm_bwd: dx and per-row dg of RMSNorm, given x, gamma, rsigma and dy.

Per row, with r = rsigma and gamma = g (+1 when zero-centred):
dx = r * dy * gamma - r^3 * x * sum(dy * x * gamma) / n_cols and dg_row = dy * x * r.

The original's structure, kept so that speedups compare with published ones: a
persistent grid of NUM_PRGMS programs strides over the rows. Without USE_BLOCKED a
row is one BLOCK_SIZE block held in registers (the row loop is software-pipelined
two deep); with USE_BLOCKED each row takes two sweeps over its full blocks
(unmasked, pipelined) plus a masked tail block: the row sum, then dx and dg.
"""

import triton
import triton.language as tl


@triton.jit
def _gamma(g_ptr, cols, n_cols, MASKED: tl.constexpr, ZERO_CENTERED_GAMMA: tl.constexpr):
    """gamma at ``cols`` in float32; a full block (not MASKED) is loaded unmasked."""
    if MASKED:
        g = tl.load(g_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    else:
        g = tl.load(g_ptr + cols).to(tl.float32)
    if ZERO_CENTERED_GAMMA:
        g += 1.0
    return g


@triton.jit
def rms_bwd_kernel(
    grad_output_ptr, input_ptr, g_ptr, rsigma_ptr, dx_ptr, dg_ptr, input_row_stride,
    output_row_stride, n_rows, n_cols, ZERO_CENTERED_GAMMA: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, USE_BLOCKED: tl.constexpr, NUM_PRGMS: tl.constexpr,
):
    first_row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK_SIZE)
    dx_ty = dx_ptr.dtype.element_ty
    if USE_BLOCKED:
        full_blocks = tl.cdiv(n_cols, BLOCK_SIZE) - 1
        tail = full_blocks * BLOCK_SIZE + lanes
        tail_mask = tail < n_cols
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=1):
            x_row = input_ptr + row * input_row_stride
            dy_row = grad_output_ptr + row * output_row_stride
            dx_row = dx_ptr + row * input_row_stride
            dg_row = dg_ptr + row * input_row_stride

            total = 0.0
            for block in tl.range(0, full_blocks, num_stages=2):
                cols = block * BLOCK_SIZE + lanes
                x = tl.load(x_row + cols).to(tl.float32)
                dy = tl.load(dy_row + cols).to(tl.float32)
                total += tl.sum(dy * x * _gamma(g_ptr, cols, n_cols, False, ZERO_CENTERED_GAMMA), axis=0)
            x = tl.load(x_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            total += tl.sum(dy * x * _gamma(g_ptr, tail, n_cols, True, ZERO_CENTERED_GAMMA), axis=0)

            r = tl.load(rsigma_ptr + row).to(tl.float32)
            coef = r * r * r * (total / n_cols)
            for block in tl.range(0, full_blocks, num_stages=2):
                cols = block * BLOCK_SIZE + lanes
                x = tl.load(x_row + cols).to(tl.float32)
                dy = tl.load(dy_row + cols).to(tl.float32)
                gamma = _gamma(g_ptr, cols, n_cols, False, ZERO_CENTERED_GAMMA)
                tl.store(dx_row + cols, (dy * r * gamma - coef * x).to(dx_ty))
                tl.store(dg_row + cols, dy * x * r)
            x = tl.load(x_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            gamma = _gamma(g_ptr, tail, n_cols, True, ZERO_CENTERED_GAMMA)
            tl.store(dx_row + tail, (dy * r * gamma - coef * x).to(dx_ty), mask=tail_mask)
            tl.store(dg_row + tail, dy * x * r, mask=tail_mask)
    else:
        mask = lanes < n_cols
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=2):
            x = tl.load(input_ptr + row * input_row_stride + lanes, mask=mask, other=0.0)
            dy = tl.load(grad_output_ptr + row * output_row_stride + lanes, mask=mask, other=0.0)
            x = x.to(tl.float32)
            dy = dy.to(tl.float32)
            gamma = _gamma(g_ptr, lanes, n_cols, True, ZERO_CENTERED_GAMMA)
            r = tl.load(rsigma_ptr + row).to(tl.float32)
            coef = r * r * r * (tl.sum(dy * x * gamma, axis=0) / n_cols)
            tl.store(dx_ptr + row * input_row_stride + lanes, (dy * r * gamma - coef * x).to(dx_ty),
                     mask=mask)
            tl.store(dg_ptr + row * input_row_stride + lanes, dy * x * r, mask=mask)
