"""Kernel sources the tuner's tests share."""

import textwrap

# A vector add whose block size is a constexpr set at its launch site (the tests add the launch).
ADD_KERNEL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)
''')
