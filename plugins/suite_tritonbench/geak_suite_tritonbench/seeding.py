"""Seeding every generator a TritonBench test may draw from.

The reference and the candidate run in different processes, so both must draw
the same inputs from the same seed.

What the data does about seeds: 176 of the 184 tests set none; four tests
(``masked_add_cuda``, ``matmul_leakyrelu``, ``softmax_optimize``,
``vector_addition``) call ``torch.manual_seed(0)`` inside the test function;
four reference files (``rbe_triton_transform``, ``rms_matmul_rbe``,
``rms_rbe_matmul``, ``rmsnorm_triton``) call ``torch.manual_seed(1234)`` at
module level, in the reference code above the separator. The original
TritonBench scorer seeds nothing. GEAK-eval seeds Python's ``random``, NumPy
and torch (CPU and every GPU) with 42 before it executes a file, so a test
draws its inputs from seed 42 followed by whatever the module's own top-level
code does (a module-level ``torch.manual_seed(1234)`` replaces it).

``seed_as_imported`` reproduces that state right before the test is called:
the seed, then the module's own module-level seeding calls with literal
arguments, in order. A candidate that does not repeat the reference's
``torch.manual_seed(1234)`` therefore draws other inputs than the reference,
as under GEAK-eval.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geak_core.api.astutil import dotted_name, parse_source

PROTOCOL_SEED = 42  # GEAK-eval's set_seed() default, applied before each file runs

# Module-level seeding calls replayed by ``seed_as_imported``: dotted callee -> generator.
_SEEDING_CALLS: dict[str, str] = {
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
    "torch.cuda.manual_seed": "torch.cuda",
    "torch.cuda.manual_seed_all": "torch.cuda",
    "random.seed": "random",
    "np.random.seed": "numpy",
    "numpy.random.seed": "numpy",
}


def seed_all(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (the CPU's and every GPU's) with ``seed``.

    What ``torch.manual_seed`` does for the CPU and CUDA / HIP devices, without
    its walk over every other backend (MPS, XPU, custom devices): that walk
    costs about 80 us of host time per call, and performance-script cases seed
    right before the timed call, where host time must stay below the judge's
    queue-ahead for the kernel alone to be timed.
    """
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        for generator in torch.cuda.default_generators:
            generator.manual_seed(seed)
    elif torch.cuda.is_available():  # queued by torch until CUDA initialises
        torch.cuda.manual_seed_all(seed)


def module_seeding_calls(source: str) -> list[tuple[str, int]]:
    """``(generator, seed)`` of every module-level seeding call with a literal integer seed."""
    try:
        tree = parse_source(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
            continue
        generator = _SEEDING_CALLS.get(dotted_name(call.func, calls=True))
        argument = call.args[0]
        if generator and isinstance(argument, ast.Constant) and type(argument.value) is int:
            found.append((generator, argument.value))
    return found


def module_seeding_of(module_globals: dict[str, Any] | None) -> list[tuple[str, int]]:
    """The module-level seeding calls of the file a module was imported from."""
    path = (module_globals or {}).get("__file__")
    if not isinstance(path, str):
        return []
    try:
        return module_seeding_calls(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def _seeders() -> dict[str, Callable[[int], Any]]:
    import random

    import numpy as np
    import torch

    return {
        "torch": torch.manual_seed,
        "torch.cuda": torch.cuda.manual_seed_all,
        "random": random.seed,
        "numpy": lambda s: np.random.seed(s % 2**32),
    }


def seed_as_imported(seed: int, calls: list[tuple[str, int]]) -> None:
    """Seed everything with ``seed``, then replay a module's own seeding ``calls``."""
    seed_all(seed)
    if calls:
        seeders = _seeders()
        for generator, value in calls:
            seeders[generator](value)
