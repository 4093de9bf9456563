"""Running a task file: importing it, its input sets, its models. Used by the suite's probe
and by the harness (in the judge's children); torch is imported where it is needed."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from geak_suite_local.modelfile import INIT_FUNCTION, INPUTS_FUNCTION

# KernelBench seeds torch with 42 before building each model, so that the reference and a
# candidate that declares the same layers in the same order start from the same weights.
INIT_SEED = 42


def case_name(set_name: str, dtype: str, dtypes: list[str]) -> str:
    return set_name if len(dtypes) == 1 else f"{set_name}_{dtype}"


def import_file(path: str | Path, name: str) -> ModuleType:
    """The module of the file at ``path`` under ``name`` (registered in ``sys.modules`` while
    it runs, as an import does, so that dataclasses and pickling find it)."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not importable")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@contextmanager
def overridden(module: ModuleType, overrides: dict[str, Any]) -> Iterator[None]:
    """The module's globals with an input set's values while the block runs."""
    missing = object()
    saved = {k: module.__dict__.get(k, missing) for k in overrides}
    module.__dict__.update(overrides)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is missing:
                module.__dict__.pop(key, None)
            else:
                module.__dict__[key] = value


def init_inputs(module: ModuleType, where: str) -> list[Any]:
    function = getattr(module, INIT_FUNCTION, None)
    if function is None:
        return []
    values = function()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{where}: {INIT_FUNCTION}() must return a list, got "
                        f"{type(values).__name__}")
    return list(values)


def forward_inputs(module: ModuleType, where: str) -> list[Any]:
    values = getattr(module, INPUTS_FUNCTION)()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{where}: {INPUTS_FUNCTION}() must return a list, got "
                        f"{type(values).__name__}")
    return list(values)


def cast(value: Any, dtype: Any) -> Any:
    """A floating tensor in ``dtype`` (others as they are)."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype:
        return value.to(dtype)
    return value


def output_list(result: Any, where: str) -> list[Any]:
    """A forward's result as a list of tensors: a tensor, or a tuple or list of them; anything
    else is an error naming what it was."""
    import torch

    values = list(result) if isinstance(result, (tuple, list)) else [result]
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            what = f"element {index} of its result is" if isinstance(result, (tuple, list)) \
                else "it returned"
            raise TypeError(f"{where}: forward() must return a tensor or a tuple of tensors; "
                            f"{what} {type(value).__name__}")
    if not values:
        raise TypeError(f"{where}: forward() returned an empty {type(result).__name__}")
    return values
