"""Fill an integer buffer with raw 32-bit Philox output, tl.randint(seed,
offsets): element i gets the first word of Philox4x32 (10 rounds) applied to
the counter (i, 0, 0, 0) under the key (low, high 32 bits of the seed). The
words are unsigned; storing them into an int32 buffer reinterprets the bits
(view the result as uint32 to compare). tl.randint4x returns all four words
at once when more than one stream is needed."""

import torch
import triton
import triton.language as tl


@triton.jit
def randint_fill_kernel(out_ptr, n, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    words = tl.randint(seed, offsets)
    tl.store(out_ptr + offsets, words.to(tl.int32, bitcast=True), mask=offsets < n)


def randint_fill(n: int, seed: int):
    out = torch.empty(n, dtype=torch.int32)
    randint_fill_kernel[(triton.cdiv(n, 128),)](out, n, seed, BLOCK=128)
    return out
