"""Reference for rocm/test_triton_swizzle2d.

The original's schedule, kept so that speedups compare with published ones: one program
walks the size_i x size_j index grid row by row, one element at a time, and stores each
linear index where tl.swizzle2d sends it. A sequential scalar loop is very slow on a GPU;
beating it (computing the inverse mapping for whole tiles, say) is the candidate's job.
"""

import triton
import triton.language as tl


@triton.jit
def swizzle2d_kernel(output, size_i, size_j, size_g):
    for src_row in range(0, size_i):
        for src_col in range(0, size_j):
            dst_row, dst_col = tl.swizzle2d(src_row, src_col, size_i, size_j, size_g)
            linear = src_row * size_j + src_col
            tl.store(output + dst_row * size_j + dst_col, linear.to(output.dtype.element_ty))
