"""Reference for rocm/rmsnorm_fwd: y = x * rsqrt(mean(x^2) + eps) * gamma, plus rsigma.

The original's structure, kept so that speedups compare with published ones: a
persistent grid of NUM_PRGMS programs strides over the rows. Without USE_BLOCKED a
row is one BLOCK_SIZE block held in registers (the row loop is software-pipelined
two deep); with USE_BLOCKED each row takes two sweeps over its full blocks
(unmasked, pipelined) plus a masked tail block: the sum of squares, then the
normalised output. gamma is g, or g + 1 when zero-centred.
"""

import triton
import triton.language as tl


@triton.jit
def _normalised(x, rsigma, g_ptr, cols, n_cols, MASKED: tl.constexpr,
                ZERO_CENTERED_GAMMA: tl.constexpr):
    """x * rsigma * gamma; for a full block (not MASKED) gamma is loaded unmasked."""
    if MASKED:
        g = tl.load(g_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    else:
        g = tl.load(g_ptr + cols).to(tl.float32)
    if ZERO_CENTERED_GAMMA:
        g += 1.0
    return x * rsigma * g


@triton.jit
def rms_kernel(
    output_ptr, input_ptr, g_ptr, rsigma_ptr, input_row_stride, output_row_stride, n_rows,
    n_cols, epsilon, ZERO_CENTERED_GAMMA: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    USE_BLOCKED: tl.constexpr, NUM_PRGMS: tl.constexpr,
):
    first_row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK_SIZE)
    out_ty = output_ptr.dtype.element_ty
    if USE_BLOCKED:
        full_blocks = tl.cdiv(n_cols, BLOCK_SIZE) - 1
        tail = full_blocks * BLOCK_SIZE + lanes
        tail_mask = tail < n_cols
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=1):
            x_row = input_ptr + row * input_row_stride
            y_row = output_ptr + row * output_row_stride
            squares = 0.0
            for block in tl.range(0, full_blocks, num_stages=2):
                x = tl.load(x_row + block * BLOCK_SIZE + lanes).to(tl.float32)
                squares += tl.sum(x * x, axis=0)
            x = tl.load(x_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            squares += tl.sum(x * x, axis=0)
            rsigma = tl.rsqrt(squares / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            for block in tl.range(0, full_blocks, num_stages=2):
                cols = block * BLOCK_SIZE + lanes
                x = tl.load(x_row + cols).to(tl.float32)
                y = _normalised(x, rsigma, g_ptr, cols, n_cols, False, ZERO_CENTERED_GAMMA)
                tl.store(y_row + cols, y.to(out_ty))
            x = tl.load(x_row + tail, mask=tail_mask, other=0.0).to(tl.float32)
            y = _normalised(x, rsigma, g_ptr, tail, n_cols, True, ZERO_CENTERED_GAMMA)
            tl.store(y_row + tail, y.to(out_ty), mask=tail_mask)
    else:
        mask = lanes < n_cols
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=2):
            x = tl.load(input_ptr + row * input_row_stride + lanes, mask=mask, other=0.0)
            x = x.to(tl.float32)
            rsigma = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            y = _normalised(x, rsigma, g_ptr, lanes, n_cols, True, ZERO_CENTERED_GAMMA)
            tl.store(output_ptr + row * output_row_stride + lanes, y.to(out_ty), mask=mask)
