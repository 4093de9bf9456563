"""What the judge's child jobs (``child_jobs``) and the timed sides (``timed_calls``) both use:
where the child runs (the interpreter or a device), the ``error`` frame of an exception,
and a case's inputs per stage.

Both modules import it; neither imports the other's basics, so ``child_jobs`` can import
``timed_calls`` (its jobs time their sides) without an import circle.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

MAX_TRACEBACK = 20_000


def is_interpreter() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def device_name() -> str:
    return "cpu" if is_interpreter() else "cuda"


def format_exception(exc: BaseException, hide: dict[str, str] | None = None) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    for path, label in (hide or {}).items():
        text = text.replace(path, label)
    return text[-MAX_TRACEBACK:]


def error_frame(kind: str, exc: BaseException, hide: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "exception": type(exc).__name__,
        "message": str(exc)[:4000],
        "error": format_exception(exc, hide),
        **extra,
    }


# ---------------------------------------------------------------------------
# Inputs per stage
# ---------------------------------------------------------------------------


def make_inputs(harness: Any, task: Any, case: Any, seed: int, stage: str) -> dict[str, Any]:
    from geak_core.api.harness import apply_outliers

    inputs = harness.make_inputs(case, seed, device_name())
    if stage == "stage2":
        import torch

        spec = task.outliers
        names = spec.inputs if spec.inputs is not None else [
            k for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.dtype.is_floating_point
        ]
        for name in names:
            # A listed input may be absent from some cases (an optional bias, say).
            if isinstance(inputs.get(name), torch.Tensor):
                inputs[name] = apply_outliers(inputs[name], spec.fraction, spec.scale, seed)
    return inputs


def prefetch(harness: Any, case: Any, seed: int) -> None:
    """The harness's host-side preparation of a case's inputs (``Harness.prefetch``), done
    before the child asks for the device; a failure is left for ``make_inputs`` to raise
    where runs report it."""
    hook = getattr(harness, "prefetch", None)
    if callable(hook):
        try:
            hook(case, seed)
        except Exception:
            pass
