"""Reference for rocm/rmsnorm_fwd: y = x * rsqrt(mean(x^2) + eps) * gamma, plus rsigma.

The original's algorithm, kept so that speedups compare with published ones: a
persistent grid of NUM_PRGMS programs strides over the rows. Without USE_BLOCKED a
row is one BLOCK_SIZE block held in registers, and g is loaded again with each row
(the row loop is software-pipelined two deep); with USE_BLOCKED each row takes two
sweeps over its full blocks (unmasked, pipelined two deep) plus a masked tail block:
the sum of squares, then the normalised output. gamma is g, or g + 1 when
zero-centred. As in the original, the masked row loads and stores carry a 16-byte
alignment hint (tl.multiple_of; safe on any row of a contiguous x: where n_cols is
not a multiple of 16 the mask allows no vector access) and the loads it marks ".cg"
(L2 only) are marked so here. The original also hints the unmasked full-block loads
of the blocked path; here Triton's argument specialisation finds that alignment
instead: the same code wherever rows start on 16 bytes (every full case), and no
misaligned vector load on a GPU where they do not (the small blocked cases). The
original autotunes num_warps over 4, 8 and 16 (num_stages=1, which none of its loops
reads: each sets its own); the harness passes num_warps by block size, so that this
baseline's time owes nothing to a tuning run.
"""

import triton
import triton.language as tl


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
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=1):
            x_row = input_ptr + row * input_row_stride
            y_row = output_ptr + row * output_row_stride
            full_blocks = tl.cdiv(n_cols, BLOCK_SIZE) - 1
            squares = 0.0
            for block in tl.range(0, full_blocks, num_stages=2):
                x = tl.load(x_row + block * BLOCK_SIZE + lanes).to(tl.float32)
                squares += tl.sum(x * x, axis=0)
            tail = full_blocks * BLOCK_SIZE + lanes
            tail_mask = tail < n_cols
            x_ptrs = tl.multiple_of(x_row + tail, (16,))
            x = tl.load(x_ptrs, mask=tail_mask, other=0.0, cache_modifier=".cg").to(tl.float32)
            squares += tl.sum(x * x, axis=0)
            rsigma = tl.rsqrt(squares / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            for block in tl.range(0, full_blocks, num_stages=2):
                cols = block * BLOCK_SIZE + lanes
                x = tl.load(x_row + cols).to(tl.float32)
                gamma = tl.load(g_ptr + cols).to(tl.float32)
                if ZERO_CENTERED_GAMMA:
                    gamma += 1
                tl.store(y_row + cols, (x * rsigma * gamma).to(out_ty))
            x = tl.load(x_row + tail, mask=tail_mask, other=0.0, cache_modifier=".cg").to(tl.float32)
            gamma = tl.load(g_ptr + tail, mask=tail_mask, other=0.0).to(tl.float32)
            if ZERO_CENTERED_GAMMA:
                gamma += 1
            tl.store(y_row + tail, (x * rsigma * gamma).to(out_ty), mask=tail_mask)
    else:
        mask = lanes < n_cols
        for row in tl.range(first_row, n_rows, NUM_PRGMS, num_stages=2):
            x_ptrs = tl.multiple_of(input_ptr + row * input_row_stride + lanes, (16,))
            x = tl.load(x_ptrs, mask=mask, other=0.0, cache_modifier=".cg").to(tl.float32)
            gamma = tl.load(g_ptr + lanes, mask=mask, other=0.0).to(tl.float32)
            rsigma = tl.rsqrt(tl.sum(x * x, axis=-1) / n_cols + epsilon)
            tl.store(rsigma_ptr + row, rsigma)
            if ZERO_CENTERED_GAMMA:
                gamma += 1
            y_ptrs = tl.multiple_of(output_ptr + row * output_row_stride + lanes, (16,))
            tl.store(y_ptrs, (x * rsigma * gamma).to(out_ty), mask=mask)
