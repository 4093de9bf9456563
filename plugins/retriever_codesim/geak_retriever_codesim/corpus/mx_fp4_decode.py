"""Decode MX-format fp4 (e2m1) data to float: every byte packs two 4-bit
values (low nibble first), each with 1 sign, 2 exponent and 1 mantissa bit,
so the magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6; every group of 32 values
shares one e8m0 scale byte worth 2^(byte - 127). Each program decodes BLOCK
groups: it unpacks nibbles with shifts and masks, rebuilds the magnitude
arithmetically (subnormal when the exponent field is 0), applies the sign
and multiplies by the group's power-of-two scale. The upcast path for
microscaled GEMM references."""

import torch
import triton
import triton.language as tl


@triton.jit
def decode_e2m1_kernel(packed_ptr, scale_ptr, out_ptr, n_groups, BLOCK: tl.constexpr):
    groups = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    byte_idx = tl.arange(0, 16)
    ok = groups[:, None] < n_groups
    packed = tl.load(packed_ptr + groups[:, None] * 16 + byte_idx[None, :], mask=ok, other=0).to(
        tl.int32
    )
    lo = packed & 0xF
    hi = (packed >> 4) & 0xF
    nibbles = tl.interleave(lo, hi)
    exponent = (nibbles >> 1) & 0x3
    mantissa = (nibbles & 0x1).to(tl.float32)
    normal = (1.0 + 0.5 * mantissa) * tl.exp2((exponent - 1).to(tl.float32))
    magnitude = tl.where(exponent == 0, 0.5 * mantissa, normal)
    value = tl.where((nibbles & 0x8) != 0, -magnitude, magnitude)
    e8m0 = tl.load(scale_ptr + groups, mask=groups < n_groups, other=127).to(tl.float32)
    value = value * tl.exp2(e8m0 - 127.0)[:, None]
    tl.store(out_ptr + groups[:, None] * 32 + tl.arange(0, 32)[None, :], value, mask=ok)


def decode_e2m1(packed: torch.Tensor, scales: torch.Tensor):
    """packed uint8 (groups, 16), scales uint8 (groups,) -> float32 (groups, 32)."""
    n_groups = packed.shape[0]
    out = torch.empty((n_groups, 32), dtype=torch.float32)
    decode_e2m1_kernel[(triton.cdiv(n_groups, 4),)](packed, scales, out, n_groups, BLOCK=4)
    return out
