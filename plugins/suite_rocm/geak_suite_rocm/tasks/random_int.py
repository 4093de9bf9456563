"""rocm/test_random_int: fill X with Philox random integers, X[i] = tl.randint(seed, i).

Difficulty 1: a masked store of tl.randint over 1024-element blocks (or a hand-written Philox).
The oracle is our numpy Philox4x32-10, checked bit for bit against tl.randint. In Triton 3.6
tl.randint always runs the 32-bit Philox: a 64-bit offset is split into the first two counter
words (it does not switch to Philox4x64), so int32 and int64 outputs hold the same stream, the
int64 one zero-extended. Fixes: none needed beyond an exact check; the module-level BLOCK is a
tl.constexpr global (a plain global no longer compiles with Triton 3.6).
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import cdiv, dtype_of, element_size, launch, poisoned
from geak_core.api.tasks import Case, EntryPoint, Task

BLOCK = 1024
_MASK32 = 0xFFFFFFFF
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85  # key increments per round
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57  # round multipliers


def philox4x32_first_word(seed: int, offsets: Any) -> Any:
    """First output word of Philox4x32-10 for each offset, as tl.randint(seed, offset) computes.

    Counter = (offset low 32 bits, offset high 32 bits, 0, 0); key = (seed low, seed high).
    """
    import numpy as np

    u32 = np.uint64(_MASK32)
    shift = np.uint64(32)
    off = np.asarray(offsets, dtype=np.uint64)
    c0, c1 = off & u32, (off >> shift) & u32
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & _MASK32), np.uint64((seed >> 32) & _MASK32)
    mul_a, mul_b = np.uint64(_ROUND_A), np.uint64(_ROUND_B)
    for _ in range(10):
        prod_a, prod_b = mul_a * c0, mul_b * c2  # 32 x 32 -> 64 bits, no overflow
        c0, c1, c2, c3 = (
            (prod_b >> shift) ^ c1 ^ k0,
            prod_b & u32,
            (prod_a >> shift) ^ c3 ^ k1,
            prod_a & u32,
        )
        k0 = (k0 + np.uint64(_KEY_A)) & u32
        k1 = (k1 + np.uint64(_KEY_B)) & u32
    return c0.astype(np.uint32)


TASK = Task(
    suite="rocm",
    id="test_random_int",
    instruction=(
        "Write two Triton kernels that fill X with random integers from Triton's Philox "
        "generator: `randint_kernel_runtime_seed(X, N, seed_val)` (seed is a runtime integer) "
        "and `randint_kernel_const_seed(X, N, seed_val: tl.constexpr)` (seed is a compile-time "
        "constant). Both must produce X[i] = tl.randint(seed_val, i) for i < N (bit-exact: "
        "the first word of Philox4x32 with 10 rounds, counter (i low 32 bits, i high 32 bits, "
        "0, 0), key (seed low 32 bits, seed high 32 bits)), stored into X's dtype (int32 keeps "
        "the 32 bits, int64 holds the zero-extended unsigned value). X is contiguous with N "
        "elements. The harness launches grid (cdiv(N, 1024),) with num_warps=4; program p "
        "covers offsets p*1024 .. p*1024+1023 (computed in X's element type, masked by N): "
        "define a module-level `BLOCK = tl.constexpr(1024)` (Triton 3.x rejects a merely annotated global). seed_val is passed by keyword; "
        "seeds up to 0xfcafeb0ba (above 2**32) occur."
    ),
    entry_points=[
        EntryPoint("randint_kernel_runtime_seed", params=("X", "N", "seed_val")),
        EntryPoint(
            "randint_kernel_const_seed", params=("X", "N", "seed_val"), constexpr=("seed_val",)
        ),
    ],
    harness="",
    difficulty=1,
    category="Random",
    outliers=None,
    outlier_note="No input tensors: the output is a pure function of the seed and the offsets.",
    seeds=(0,),
    shapes_note=(
        "X shapes (10,), (4, 53), (400,) and N = 2^16, 2^20, 2^23; int32 and int64; "
        "seeds 0, 42, 124, 0xffffffff, 0xfcafeb0ba; runtime and constexpr seeds."
    ),
)


def _case(shape: tuple[int, ...], seed: int, dt: str, const: bool, timed: bool) -> Case:
    n = 1
    for s in shape:
        n *= s
    kind = "const" if const else "runtime"
    return Case(
        name=f"{'x'.join(map(str, shape))}_seed{seed:#x}_{dt}_{kind}",
        params={"shape": list(shape), "seed_val": seed, "dtype": dt, "const_seed": const,
                "num_warps": 4},
        flops=float(75 * n),
        bytes=float(n * element_size(dt)),
        dtype=dt,
        timed=timed,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [
                _case((10,), 0, "int32", True, False),
                _case((4, 53), 0xFFFFFFFF, "int64", False, False),
                _case((400,), 0xFCAFEB0BA, "int32", False, False),
                _case((2100,), 42, "int64", True, False),
            ]
        checks = [
            _case((10,), 0, "int32", True, False),
            _case((4, 53), 124, "int32", True, False),
            _case((4, 53), 0xFFFFFFFF, "int64", False, False),
            _case((400,), 0xFCAFEB0BA, "int32", False, False),
            _case((400,), 0xFCAFEB0BA, "int64", True, False),
        ]
        timed = [
            _case((n,), seed, dt, const, True)
            for n in (1 << 16, 1 << 20, 1 << 23)
            for seed, dt, const in ((42, "int32", False), (0, "int64", True))
        ]
        return checks + timed

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        return {"device": device}  # nothing random to draw: the output depends on seed_val only

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        p = case.params
        return {"X": poisoned(tuple(p["shape"]), dtype_of(p["dtype"]), inputs["device"])}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        p = case.params
        x = outputs["X"]
        kernel = (
            module.randint_kernel_const_seed if p["const_seed"]
            else module.randint_kernel_runtime_seed
        )
        launch(kernel, (cdiv(x.numel(), BLOCK),), X=x, N=x.numel(), seed_val=p["seed_val"],
               num_warps=p["num_warps"])

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import numpy as np
        import torch

        p = case.params
        shape = tuple(p["shape"])
        words = philox4x32_first_word(p["seed_val"], np.arange(int(np.prod(shape))))
        if p["dtype"] == "int32":
            values = torch.from_numpy(words.view(np.int32).copy())
        else:
            values = torch.from_numpy(words.astype(np.int64))
        return {"X": values.reshape(shape)}
