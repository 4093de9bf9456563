"""Copy through 1-D block pointers with out-of-range padding: the source is
declared with a shorter logical extent than the destination, so tiles that
straddle or pass the source's end are filled by tl.load's padding_option
("zero" or "nan"; without boundary_check the behaviour past the end is
undefined). The padded tile is then stored through a destination block
pointer with boundary_check, so the tail beyond the destination is never
written. Shows make_block_ptr for plain vectors and PADDING as a constexpr."""

import torch
import triton
import triton.language as tl


@triton.jit
def padded_copy_kernel(
    src_ptr, dst_ptr, src_len, dst_len, BLOCK: tl.constexpr, PADDING: tl.constexpr
):
    start = tl.program_id(0) * BLOCK
    src = tl.make_block_ptr(
        src_ptr, shape=(src_len,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,)
    )
    dst = tl.make_block_ptr(
        dst_ptr, shape=(dst_len,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,)
    )
    tile = tl.load(src, boundary_check=(0,), padding_option=PADDING)
    tl.store(dst, tile, boundary_check=(0,))


def padded_copy(src: torch.Tensor, dst_len: int, padding: str = "zero"):
    dst = torch.empty(dst_len, dtype=src.dtype)
    padded_copy_kernel[(triton.cdiv(dst_len, 32),)](
        src, dst, src.numel(), dst_len, BLOCK=32, PADDING=padding
    )
    return dst
