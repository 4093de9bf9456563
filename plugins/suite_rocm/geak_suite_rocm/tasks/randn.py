"""rocm/test_randn: fill X with uniform [0, 1) floats, X[i] = tl.rand(seed, i) (not normal).

Difficulty 1: a masked store of tl.rand over 1024-element blocks.
Fixes: the original only ran a Kolmogorov-Smirnov test, so any uniform generator passed it; here
the stream itself is checked exactly against our numpy Philox4x32-10 (shared with
test_random_int) followed by tl.rand's integer-to-float conversion, so a candidate must produce
tl.rand's values at the same offsets. The module-level BLOCK is a tl.constexpr global (a plain
global no longer compiles with Triton 3.6).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, launch, poisoned
from geak_core.api.tasks import Case, EntryPoint, Task

from geak_suite_rocm.tasks.random_int import philox4x32_first_word

BLOCK = 1024
# tl.rand: the word as int32, negatives folded (x < 0 -> -x - 1), times the largest float32
# scale that keeps 2**31 - 1 below 1.0
_UNIFORM_SCALE = 4.6566127342e-10

TASK = Task(
    suite="rocm",
    id="test_randn",
    instruction=(
        "Write two Triton kernels that fill a float32 tensor X with uniform random numbers in "
        "[0, 1) from Triton's Philox generator (despite the name, not normal samples): "
        "`randn_kernel_runtime_seed(X, N, seed, dtype: tl.constexpr)` (runtime seed) and "
        "`randn_kernel_const_seed(X, N, seed: tl.constexpr, dtype: tl.constexpr)` (compile-time "
        "seed). Both must produce X[i] = tl.rand(seed, i) for i < N exactly (the same stream, "
        "bit for bit). `dtype` is tl.int32 or tl.int64: the integer type in which offsets are "
        "computed (program id cast to it). X is contiguous with N elements. The harness "
        "launches grid (cdiv(N, 1024),) with num_warps=4; program p covers offsets "
        "p*1024 .. p*1024+1023 masked by N: define a module-level `BLOCK = tl.constexpr(1024)` (Triton 3.x rejects a merely annotated global). "
        "seed and dtype are passed by keyword."
    ),
    entry_points=[
        EntryPoint(
            "randn_kernel_runtime_seed", params=("X", "N", "seed", "dtype"), constexpr=("dtype",)
        ),
        EntryPoint(
            "randn_kernel_const_seed",
            params=("X", "N", "seed", "dtype"),
            constexpr=("seed", "dtype"),
        ),
    ],
    harness="",
    difficulty=1,
    category="Random",
    tolerances={"float32": [0.0, 0.0]},
    outliers=None,
    outlier_note="No input tensors: the output is a pure function of the seed and the offsets.",
    seeds=(0,),
    shapes_note=(
        "X float32 with N = 100000 (seeds 0, 42, 124, 54) and N = 2^16, 2^20, 2^22 (seeds 0, "
        "42); offsets int32 or int64; runtime and constexpr seeds."
    ),
)


def _case(n: int, seed: int, offset_dtype: str, const: bool, timed: bool) -> Case:
    kind = "const" if const else "runtime"
    return Case(
        name=f"n{n}_seed{seed}_{offset_dtype}_{kind}",
        params={"N": n, "seed": seed, "offset_dtype": offset_dtype, "const_seed": const,
                "num_warps": 4},
        flops=float(75 * n),
        bytes=float(4 * n),
        dtype="float32",
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(3000, 0, "int32", True, False), _case(2500, 42, "int64", False, False)]
        checks = [
            _case(100000, 0, "int32", True, False),
            _case(100000, 42, "int64", False, False),
            _case(100000, 124, "int32", False, False),
            _case(100000, 54, "int64", True, False),
        ]
        timed = [
            _case(n, seed, dt, const, True)
            for n in (1 << 16, 1 << 20, 1 << 22)
            for seed, dt, const in ((0, "int32", False), (42, "int64", True))
        ]
        return checks + timed

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        return {"device": device}  # nothing random to draw: the output depends on the seed only

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        return {"X": poisoned((case.params["N"],), torch.float32, inputs["device"])}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        import triton.language as tl

        p = case.params
        kernel = (
            module.randn_kernel_const_seed if p["const_seed"] else module.randn_kernel_runtime_seed
        )
        launch(kernel, (cdiv(p["N"], BLOCK),), X=outputs["X"], N=p["N"], seed=p["seed"],
               dtype=getattr(tl, p["offset_dtype"]), num_warps=p["num_warps"])

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import numpy as np
        import torch

        p = case.params
        words = philox4x32_first_word(p["seed"], np.arange(p["N"])).view(np.int32)
        folded = np.where(words < 0, ~words, words)  # ~x == -x - 1, without overflow
        values = folded.astype(np.float32) * np.float32(_UNIFORM_SCALE)
        return {"X": torch.from_numpy(values)}
