"""rocm/test_block_copy: copy through block pointers whose source extent is half the destination's.

Difficulty 1: one block-pointer load with a boundary check and a padding
option, one block-pointer store.

Compared with the original, whose stored result was a constant (so GEAK's
comparison checked nothing): the copied half is compared exactly, the padded
half must hold exactly 0 ("zero") or NaN ("nan") in every dtype, and the
destination starts poisoned (the original pre-zeroed it, which hid a missing
zero padding). With padding_option None the padded values are undefined, so
only the copied half is compared. A length that is not a multiple of the block
size is covered too. Bytes count the half read and the full length written.
"""

from __future__ import annotations

from typing import Any

from geak_core.api.harness import Harness as _Base
from geak_core.api.harness import (
    cdiv,
    dtype_of,
    element_size,
    generator,
    launch,
    poisoned,
    randint,
    randn,
)
from geak_core.api.tasks import Case, EntryPoint, OutlierSpec, Requirement, Task

BLOCK_SIZE = 64

TASK = Task(
    suite="rocm",
    id="test_block_copy",
    instruction=(
        "Write a Triton kernel `block_copy_kernel(a_ptr, b_ptr, N, BLOCK_SIZE, padding_option)` "
        "(BLOCK_SIZE and padding_option are tl.constexpr) that copies through block pointers: "
        "view a as a 1-D tensor of extent N // 2 and b as a 1-D tensor of extent N (both "
        "contiguous, same dtype); program p loads the BLOCK_SIZE-element block of a starting at "
        "p * BLOCK_SIZE with a boundary check and the given padding, and stores it into the same "
        "block of b with a boundary check. Result: b[i] = a[i] for i < N // 2, and b[i] = padding "
        "for N // 2 <= i < N.\n"
        "padding_option is None, \"zero\" or \"nan\" (pass it straight to tl.load's "
        "padding_option): \"zero\" pads with 0 (False for bool), \"nan\" with NaN (float dtypes "
        "only); None leaves the padded values undefined, and then only b[:N // 2] is checked.\n"
        "Launch: grid = (cdiv(N, BLOCK_SIZE),), BLOCK_SIZE = 64 (may be autotuned); all "
        "arguments are passed by keyword. N is not always a multiple of BLOCK_SIZE: never touch "
        "b beyond N. b starts filled with garbage. Dtypes: bool, int16, int32, float16, float32, "
        "bfloat16. The copy must be exact."
    ),
    entry_points=[
        EntryPoint(
            "block_copy_kernel",
            params=("a_ptr", "b_ptr", "N", "BLOCK_SIZE", "padding_option"),
            constexpr=("BLOCK_SIZE", "padding_option"),
        )
    ],
    harness="",
    difficulty=1,
    category="Index",
    tolerances={"*": [0.0, 0.0]},
    requires=[Requirement("block_ptr", "the reference works through tl.make_block_ptr")],
    case_requires=[Requirement("gpu", "the bfloat16 NaN-padding case")],
    outliers=OutlierSpec(inputs=("a",)),
    shapes_note=(
        "N (destination length): correctness 100, 512, 1000, 1024 over bool, int16, int32, "
        "float16, float32, bfloat16 and every padding; timed N = 1048576 in float16, float32, "
        "bfloat16, int32 with \"zero\" padding, plus 262144 float32 / 65536 float16 / 8192 "
        "bfloat16 with padding None."
    ),
)

_BF16_NAN = Requirement("gpu", "the interpreter pads bfloat16 with 0 instead of NaN")

# (N, dtype, padding, timed)
FULL = [
    (1024, "bool", "zero", False),
    (512, "int16", None, False),
    (100, "int32", "zero", False),
    (1000, "float32", "nan", False),
    (1024, "bfloat16", "nan", False),
    (512, "float16", "zero", False),
    (1048576, "float16", "zero", True),
    (1048576, "float32", "zero", True),
    (1048576, "bfloat16", "zero", True),
    (1048576, "int32", "zero", True),
    (262144, "float32", None, True),
    (65536, "float16", None, True),
    (8192, "bfloat16", None, True),
]
SMALL = [
    (128, "bool", "zero"),
    (100, "int16", None),
    (256, "int32", "zero"),
    (100, "float16", "nan"),
    (128, "float32", "nan"),
    (64, "float32", None),
    (192, "bfloat16", "zero"),
]


def _case(n: int, dt: str, padding: str | None, timed: bool) -> Case:
    needs = [_BF16_NAN] if (dt == "bfloat16" and padding == "nan") else []
    return Case(
        name=f"n{n}_{dt}_{padding or 'none'}",
        params={"N": n, "dtype": dt, "padding": padding},
        flops=0.0,
        bytes=float((n // 2 + n) * element_size(dt)),
        dtype=dt,
        timed=timed,
        requires=needs,
    )


class Harness(_Base):
    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [_case(n, dt, pad, False) for n, dt, pad in SMALL]
        return [_case(n, dt, pad, timed) for n, dt, pad, timed in FULL]

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        import torch

        g = generator(seed)
        dtype = dtype_of(case.params["dtype"])
        half = case.params["N"] // 2
        if dtype == torch.bool:
            return {"a": randint((half,), 0, 2, torch.int8, device, g).to(torch.bool)}
        if not dtype.is_floating_point:
            return {"a": randint((half,), -1000, 1000, dtype, device, g)}
        return {"a": randn((half,), dtype, device, g)}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        a, n = inputs["a"], case.params["N"]
        b = poisoned((n,), a.dtype, a.device)
        if case.params["padding"] is None:
            # Only the copied half is defined; the kernel still receives all N elements
            # (run() widens the view back to the whole buffer).
            return {"b_head": b[: n // 2]}
        return {"b": b}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        n = case.params["N"]
        b = outputs["b"] if "b" in outputs else outputs["b_head"].as_strided((n,), (1,), 0)
        launch(
            module.block_copy_kernel,
            lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),),
            a_ptr=inputs["a"],
            b_ptr=b,
            N=n,
            BLOCK_SIZE=BLOCK_SIZE,
            padding_option=case.params["padding"],
        )

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        a, n, padding = inputs["a"], case.params["N"], case.params["padding"]
        if padding is None:
            return {"b_head": a.clone()}
        fill = float("nan") if padding == "nan" else 0
        return {"b": torch.cat([a, a.new_full((n - a.numel(),), fill)])}

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        import torch

        a, n, padding = inputs["a"], case.params["N"], case.params["padding"]
        if padding is None:
            return {"b_head": a.clone()}
        fill = float("nan") if padding == "nan" else 0
        tail = torch.full((n - a.numel(),), fill, dtype=a.dtype, device=a.device)
        return {"b": torch.cat([a, tail])}
