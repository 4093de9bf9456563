"""harness.launch: kernels that loop up to a runtime size run under the CPU interpreter."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl
from geak_core.api.harness import launch

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="checks interpreter mode only"
)


@triton.jit
def _row_sums(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def test_launch_runs_a_kernel_whose_loop_bound_is_a_runtime_scalar():
    x = torch.arange(3 * 10, dtype=torch.float32).reshape(3, 10)
    out = torch.full((3,), float("nan"))
    launch(_row_sums, (3,), x_ptr=x, out_ptr=out, n_cols=10, BLOCK=4)
    assert torch.equal(out, x.sum(dim=1))


def test_inputs_are_drawn_from_the_seed_alone_and_large_cpu_draws_stay_on_the_cpu():
    import torch
    from geak_core.api.harness import DEVICE_DRAW_MIN, generator, rand, randint, randn

    shape = (DEVICE_DRAW_MIN // 256, 512)  # above the GPU-draw threshold, but bound for the CPU
    big = randn(shape, torch.float16, "cpu", generator(3))
    assert torch.equal(big, torch.randn(shape, generator=generator(3)).half())
    assert torch.equal(randn((4, 5), torch.float32, "cpu", generator(3)),
                       randn((4, 5), torch.float32, "cpu", generator(3)))
    assert not torch.equal(rand((64,), torch.float32, "cpu", generator(3)),
                           rand((64,), torch.float32, "cpu", generator(4)))
    ints = randint((1000,), 0, 3, torch.int32, "cpu", generator(3))
    assert ints.dtype == torch.int32 and set(ints.unique().tolist()) == {0, 1, 2}
