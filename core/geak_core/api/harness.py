"""The harness contract, and helpers harness authors share.

A harness exercises one task inside the judge's child processes. The judge
calls, for each case of the requested mode and each seed::

    inputs  = harness.make_inputs(case, seed, device)     # same in every process
    outputs = harness.allocate(case, inputs)               # poisoned buffers
    harness.run(module, case, inputs, outputs)             # launches module's kernels
    # outputs are compared with the reference's, inputs must be unchanged

``module`` is the candidate (or the reference) module, reached only through
the names in ``Task.entry_points``. The timed call is ``run`` alone.

Rules for harness authors:

* Build every input from ``seed`` alone (``generator(seed)`` with ``randn``,
  ``rand``, ``randint``), so the reference process and the candidate process
  see identical data.
* Allocate outputs with ``poisoned(...)``, never ``torch.empty``: a candidate
  that leaves an output unwritten must not inherit a plausible value.
* Launch kernels with ``launch(kernel, grid, **kwargs)``, passing every
  argument by name: meta-parameters the candidate autotunes are dropped and
  platform-specific config keys are sanitised.
* ``run`` returns nothing; everything compared lives in ``outputs``. An
  in-place operation clones its input into ``outputs`` in ``allocate``.

This module is imported only in child processes; importing it is cheap
(torch and triton are imported lazily).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from geak_core.api.tasks import Case, Task

if TYPE_CHECKING:
    import torch


class Harness:
    """Base class for task harnesses. Subclasses implement the five methods; ``eager``,
    ``compare``, ``oracle_tolerances`` and ``prefetch`` are optional."""

    def __init__(self, task: Task):
        self.task = task

    def cases(self, mode: str) -> list[Case]:
        """Cases for ``mode``: ``"small"`` (CPU interpreter) or ``"full"`` (GPU)."""
        raise NotImplementedError

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        """Deterministic inputs for ``case`` (tensors and scalars) from ``seed``."""
        raise NotImplementedError

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Fresh, poisoned output buffers."""
        raise NotImplementedError

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Launch ``module``'s entry points so they fill ``outputs``."""
        raise NotImplementedError

    def prefetch(self, case: Case, seed: int) -> None:
        """Optional: do ahead of time the host-side work of ``make_inputs(case, seed, ...)``
        (drawing inputs on the CPU, reading files), keeping what it makes for that call.
        The judge calls it before it asks for the device, so host work does not hold up
        other candidates' runs or timing; ``make_inputs`` must give the same inputs with or
        without it. An exception here is ignored: ``make_inputs`` raises it again where it
        is reported. The default does nothing."""

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Independent (torch / numpy) expected outputs; used to check the reference."""
        raise NotImplementedError

    def eager(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        """The task's computation in PyTorch eager, as a PyTorch user writes it: torch
        operators at the task's own dtypes, returning outputs named as ``allocate`` names
        them. The judge times it against the timing baseline for a speedup against PyTorch
        eager and checks its outputs against the reference's; it never decides correctness.
        A task whose harness defines it sets ``Task.eager = "harness"``. Raise
        ``NotImplementedError`` for a case that has no eager equivalent."""
        raise NotImplementedError

    def compare(self, case: Case, name: str, expected: Any, actual: Any) -> str | None:
        """Optional custom comparison for one output; ``None`` means use the default."""
        return None

    def oracle_tolerances(self, case: Case) -> dict[str, Any]:
        """(atol, rtol) per dtype for reference-vs-oracle checks; defaults to the task's."""
        return {**self.task.tolerances, **case.tolerances}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

POISON_INT = {1: 0x5A, 2: 0x5A5A, 4: 0x5A5A5A5A, 8: 0x5A5A5A5A5A5A5A5A}


def dtype_of(name: str) -> torch.dtype:
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return dtype


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def element_size(name: str) -> int:
    return dtype_of(name).itemsize


def poisoned(shape: Sequence[int], dtype: torch.dtype, device: str | torch.device) -> torch.Tensor:
    """An output buffer pre-filled with a value no correct kernel leaves behind.

    Floating types get NaN; integer types an unlikely bit pattern; bool True.
    """
    import torch

    out = torch.empty(tuple(shape), dtype=dtype, device=device)
    if dtype.is_floating_point:
        if dtype.itemsize == 1:  # fp8: NaN where the format has one, else max
            try:
                out.fill_(float("nan"))
            except RuntimeError:
                out.fill_(torch.finfo(dtype).max)
        else:
            out.fill_(float("nan"))
    elif dtype == torch.bool:
        out.fill_(True)
    else:
        pattern = POISON_INT.get(dtype.itemsize, 0x5A)
        info = torch.iinfo(dtype)
        value = pattern if pattern <= info.max else info.max
        out.fill_(value if info.min < 0 or value >= 0 else 0)
    return out


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A CPU torch generator seeded for one (case, seed).

    Pass it to ``randn``/``rand``/``randint``: small tensors are drawn from it
    directly; large ones on a GPU are drawn there by a device generator seeded
    from it (see ``DEVICE_DRAW_MIN``). Either way, processes on the same kind of
    device draw identical inputs from the same seed.
    """
    import torch

    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    return g


# Tensors with at least this many elements, bound for a GPU, are drawn on the GPU:
# drawing 64M normals on the host and copying them over costs seconds per input.
DEVICE_DRAW_MIN = 1 << 20


def _draw_on(shape: Sequence[int], device: str | torch.device, gen: torch.Generator) -> tuple[Any, Any]:
    """(device, generator) to draw ``shape`` with: the CPU and ``gen``, or the GPU and a
    device generator seeded from ``gen`` (which advances ``gen`` by one draw)."""
    import torch

    target = torch.device(device)
    if target.type == "cpu" or math.prod(shape) < DEVICE_DRAW_MIN:
        return torch.device("cpu"), gen
    seed = int(torch.randint(0, 2**62, (1,), generator=gen).item())
    on_device = torch.Generator(device=target)
    on_device.manual_seed(seed)
    return target, on_device


def randn(
    shape: Sequence[int], dtype: torch.dtype, device: str, gen: torch.Generator,
    mean: float = 0.0, std: float = 1.0,
) -> torch.Tensor:
    """Normal samples (float32, then cast) on ``device``; deterministic per device type."""
    import torch

    where, g = _draw_on(shape, device, gen)
    x = torch.randn(tuple(shape), generator=g, dtype=torch.float32, device=where) * std + mean
    return x.to(device=device, dtype=dtype)


def rand(
    shape: Sequence[int], dtype: torch.dtype, device: str, gen: torch.Generator,
    low: float = 0.0, high: float = 1.0,
) -> torch.Tensor:
    """Uniform samples in [low, high) on ``device``; deterministic per device type."""
    import torch

    where, g = _draw_on(shape, device, gen)
    x = torch.rand(tuple(shape), generator=g, dtype=torch.float32, device=where) * (high - low) + low
    return x.to(device=device, dtype=dtype)


def randint(
    shape: Sequence[int], low: int, high: int, dtype: torch.dtype, device: str,
    gen: torch.Generator,
) -> torch.Tensor:
    """Integers in [low, high) on ``device``; deterministic per device type."""
    import torch

    where, g = _draw_on(shape, device, gen)
    return torch.randint(low, high, tuple(shape), generator=g, dtype=torch.int64, device=where).to(
        device=device, dtype=dtype
    )


def apply_outliers(x: torch.Tensor, fraction: float, scale: float, seed: int) -> torch.Tensor:
    """Scale a ``fraction`` of ``x``'s elements (at least one) by ``scale``; returns a copy.

    Positions are drawn from a CPU generator (identical on every device) and the
    scaling happens where ``x`` lives, so large GPU tensors never travel to the host.
    """
    import torch

    if not x.dtype.is_floating_point or x.numel() == 0:
        return x
    g = torch.Generator(device="cpu")
    g.manual_seed(10_007 + int(seed))
    count = max(1, int(round(x.numel() * fraction)))
    index = torch.randint(0, x.numel(), (count,), generator=g).to(x.device)
    out = x.detach().clone().reshape(-1)
    out[index] = (out[index].to(torch.float32) * scale).to(x.dtype)
    return out.reshape(x.shape)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 2 ** math.ceil(math.log2(n))


# Launch options and config keys that only one backend accepts.
AMD_ONLY_KEYS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg") + AMD_ONLY_KEYS


def is_hip() -> bool:
    try:
        import torch

        return torch.version.hip is not None
    except Exception:
        return False


_TUNED_KEYS: dict[int, tuple[Any, frozenset[str]]] = {}
_SANITIZED: list[Any] = []


def _autotuned_keys(kernel: Any) -> frozenset[str]:
    """Meta-parameter names a candidate's autotune/heuristics decorators set (memoised:
    ``launch`` sits inside the timed region, so its own cost must stay negligible)."""
    hit = _TUNED_KEYS.get(id(kernel))
    if hit is not None and hit[0] is kernel:
        return hit[1]
    keys = frozenset(_find_tuned_keys(kernel))
    _TUNED_KEYS[id(kernel)] = (kernel, keys)
    return keys


def _find_tuned_keys(kernel: Any) -> set[str]:
    keys: set[str] = set()
    seen = 0
    obj = kernel
    while obj is not None and seen < 8:
        configs = getattr(obj, "configs", None)
        if configs:
            for config in configs:
                keys.update(getattr(config, "kwargs", {}) or {})
                keys.update(k for k in LAUNCH_OPTIONS if getattr(config, k, None) is not None)
        values = getattr(obj, "values", None)  # triton.heuristics
        if isinstance(values, dict):
            keys.update(values)
        obj = getattr(obj, "fn", None)
        seen += 1
    return keys


def sanitize_autotune_configs(kernel: Any) -> None:
    """Drop config keys the current backend rejects (AMD-only keys on NVIDIA)."""
    if is_hip():
        return
    obj = kernel
    for _ in range(8):
        if obj is None:
            break
        for config in getattr(obj, "configs", None) or []:
            kwargs = getattr(config, "kwargs", None)
            if isinstance(kwargs, dict):
                for key in AMD_ONLY_KEYS:
                    kwargs.pop(key, None)
        obj = getattr(obj, "fn", None)


_INTERPRETER_PATCHED = False


def patch_interpreter_scalars() -> None:
    """Let Triton's CPU interpreter use runtime scalars as ``range`` bounds with numpy >= 2.4.

    The interpreter holds a scalar argument as a 1-element array and converts it with
    ``int(array)`` when it bounds a loop; numpy 2.4 made that an error, so every kernel that
    loops up to a runtime size failed under ``TRITON_INTERPRET=1``. The conversion is
    re-patched to ``int(array.item())``. A no-op outside interpreter mode; idempotent.
    """
    global _INTERPRETER_PATCHED
    import os

    if _INTERPRETER_PATCHED or os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return

    def patched(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    interpreter._patch_lang_tensor = patched
    _INTERPRETER_PATCHED = True


def launch(kernel: Any, grid: Any, **kwargs: Any) -> Any:
    """Launch ``kernel[grid](**kwargs)`` the way the contract promises.

    * Arguments the candidate's ``@triton.autotune`` / ``@triton.heuristics``
      set are not passed (Triton rejects conflicting meta-parameters).
    * AMD-only launch options are dropped on other backends, and AMD-only keys
      inside autotune configs are removed.
    * ``grid`` may be a tuple or a callable of the meta-parameters.
    * Under the CPU interpreter, runtime scalars work as loop bounds
      (``patch_interpreter_scalars``).
    """
    patch_interpreter_scalars()
    tuned = _autotuned_keys(kernel)
    if tuned:
        kwargs = {k: v for k, v in kwargs.items() if k not in tuned}
        if kernel not in _SANITIZED:
            sanitize_autotune_configs(kernel)
            _SANITIZED.append(kernel)
    if not is_hip():
        kwargs = {k: v for k, v in kwargs.items() if k not in AMD_ONLY_KEYS}
    return kernel[grid](**kwargs)


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a Python-function entry point (kept for symmetry with ``launch``)."""
    return fn(*args, **kwargs)
