"""Helpers for the judge's tests: where the fixtures are, judge options, batch candidates."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHEATS = FIXTURES / "cheats"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))


def cheat_code(name: str) -> str:
    return (CHEATS / f"{name}.py").read_text()


def targeted_cheat(name: str, targets: list[str]) -> str:
    """A cheat of TARGETED_CHEATS with the paths it goes after filled in."""
    import json

    code = cheat_code(name)
    assert code.count("\nTARGETS = []\n") == 1
    return code.replace("\nTARGETS = []\n", f"\nTARGETS = {json.dumps(targets)}\n")


def judge_options(**overrides):
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    settings = {"mode": "interpreter", "workers": 2, "timeout_s": 90.0,
                "extra_pythonpath": [str(FIXTURES)]}
    settings.update(overrides)
    return TritonEvaluatorOptions(**settings)


# Cheats that only a GPU timing run can expose (tests/evaluator/test_gpu.py).
GPU_ONLY_CHEATS = ("add_side_stream", "add_lazy_when_timed", "add_idle_probe", "add_torch_when_timed",
                   "scale_replay")
# Cheats a test fills in first (the paths they go after) and judges on its own.
TARGETED_CHEATS = ("add_writes_outside",)


# Candidates judged by the session judge, as (id, task id, code).
def batch_candidates(tasks):
    out = []
    for task in tasks.values():
        out.append((f"reference:{task.id}", task.id, Path(task.reference).read_text()))
    for path in sorted(CHEATS.glob("*.py")):
        if path.stem in GPU_ONLY_CHEATS or path.stem in TARGETED_CHEATS:
            continue
        out.append((f"cheat:{path.stem}", path.stem.split("_")[0], path.read_text()))
    out += [(f"inline:{name}", task_id, code) for name, (task_id, code) in INLINE.items()]
    return out


PERM_IN_ORDER = '''
import triton
import triton.language as tl


@triton.jit
def perm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
'''

PERM_ZEROS = '''
import triton
import triton.language as tl


@triton.jit
def perm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.zeros((BLOCK,), tl.float32), mask=offsets < n)
'''

STATS_MISSING_KEY = Path(FIXTURES / "minisuite" / "references" / "stats.py").read_text().replace(
    'return {"sum": sums, "extremes": (maxs, mins), "rows": rows}',
    'return {"sum": sums, "extremes": (maxs,), "rows": rows}',
)

ADD_HANGS_IN_LAUNCH = '''
import time

import triton
import triton.language as tl


def _never(args):  # evaluated while the launch specializes the kernel, before it compiles
    while True:
        time.sleep(0.1)


@triton.heuristics({"UNUSED": _never})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, UNUSED: tl.constexpr):
    pass
'''


ADD_RAISES = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, undefined_name(x_ptr), mask=offsets < n_elements)
'''

ADD_IMPORT_FAILS = '''
import triton
import triton.language as tl

raise ValueError("broken on purpose")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass
'''

ADD_WRONG_SIGNATURE = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pass
'''

SCALE_AUTOGRAD_ALIAS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * alpha, mask=mask)


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        out = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, alpha, x.numel(), BLOCK=64)
        return out


scale = _Scale.apply
'''

INLINE = {
    "scale_autograd_alias": ("scale", SCALE_AUTOGRAD_ALIAS),
    "perm_in_order": ("perm", PERM_IN_ORDER),
    "perm_zeros": ("perm", PERM_ZEROS),
    "stats_missing_key": ("stats", STATS_MISSING_KEY),
    "add_raises": ("add", ADD_RAISES),
    "add_import_fails": ("add", ADD_IMPORT_FAILS),
    "add_wrong_signature": ("add", ADD_WRONG_SIGNATURE),
    "add_syntax_error": ("add", "import triton\n\n@triton.jit\ndef add_kernel(:\n    pass\n"),
}


