"""Check: the entry points are the candidate's own kernels and functions.

An entry point that is not a kernel (an object whose ``__getitem__`` computes
with torch), a kernel re-exported from the reference or another file, or a
kernel of the candidate that calls another file's ``@triton.jit`` function
(which inlines it) lets someone else's code do the work.

Detection (child, right after the import): :func:`check_contract` looks at
each entry point's presence, kind, defining file and parameters, and
:func:`borrowed_device_functions` at the Triton functions the candidate's
kernels reference. The problems travel as ``contract`` in the ``imported`` frame
(:class:`~geak_evaluator_triton.protocol.ImportedFrame`); the child then runs
nothing.

Interpretation (judge, :func:`report`): each problem fails the candidate at
stage ``contract``.
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any

from geak_evaluator_triton.guards import base_function, kernel_file, package_dir

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def kernel_types() -> tuple[type, ...]:
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    types: list[type] = [Autotuner, Heuristics, JITFunction]
    if os.environ.get("TRITON_INTERPRET") == "1":
        from triton.runtime.interpreter import InterpretedFunction

        types.append(InterpretedFunction)
    return tuple(types)


def check_contract(module: Any, entry_points: list[Any], candidate_file: str) -> list[str]:
    """Problems with the entry points' presence, kind and origin (empty when fine)."""
    problems: list[str] = []
    kinds = kernel_types()
    leaf_kinds = tuple(t for t in kinds if t.__name__ in ("JITFunction", "InterpretedFunction"))
    candidate_file = os.path.abspath(candidate_file)
    for ep in entry_points:
        obj = getattr(module, ep.name, None)
        if obj is None:
            problems.append(f"entry point {ep.name!r} is not defined")
            continue
        if ep.kind == "triton.jit":
            if not isinstance(obj, kinds):
                problems.append(
                    f"entry point {ep.name!r} must be a @triton.jit kernel (optionally under "
                    f"@triton.autotune / @triton.heuristics), not {type(obj).__name__}"
                )
                continue
            layer, leaf = obj, None
            for _ in range(16):
                if isinstance(layer, leaf_kinds):
                    leaf = layer
                    break
                layer = getattr(layer, "fn", None)
                if layer is None or not isinstance(layer, kinds):
                    break
            if leaf is None:
                problems.append(f"entry point {ep.name!r} does not wrap a @triton.jit function")
                continue
            where = kernel_file(leaf)
            if where != candidate_file:
                problems.append(
                    f"entry point {ep.name!r} is a kernel defined in {where}, not in the candidate's "
                    "own code"
                )
                continue
            fn = base_function(leaf)
            params = list(inspect.signature(fn).parameters)
            missing = [p for p in ep.params if p not in params]
            if missing:
                problems.append(
                    f"kernel {ep.name!r} lacks parameter(s) {', '.join(missing)} "
                    f"(expected {ep.signature()})"
                )
        elif ep.kind == "nn.Module":
            problems += _module_problems(ep.name, obj, candidate_file, module.__name__)
        else:
            if not callable(obj):
                problems.append(f"entry point {ep.name!r} must be callable, not {type(obj).__name__}")
                continue
            if not _defined_in(obj, candidate_file, module.__name__):
                problems.append(f"entry point {ep.name!r} is not defined in the candidate's own code")
    problems += borrowed_device_functions(module, candidate_file, leaf_kinds)
    return problems


def borrowed_device_functions(module: Any, candidate_file: str, leaf_kinds: tuple[type, ...]) -> list[str]:
    """Kernels of the candidate that call Triton functions defined elsewhere (not in Triton).

    Calling another file's ``@triton.jit`` function from a kernel inlines it: a candidate
    could wrap the reference's kernel in a kernel of its own.
    """
    triton_dir = package_dir("triton") + os.sep
    problems: list[str] = []
    for name, value in list(vars(module).items()):
        layer = value
        for _ in range(16):
            if isinstance(layer, leaf_kinds) or layer is None:
                break
            layer = getattr(layer, "fn", None)
        if not isinstance(layer, leaf_kinds) or kernel_file(layer) != candidate_file:
            continue
        fn = base_function(layer)
        for used, owner in _referenced_globals(fn):
            if not isinstance(used, leaf_kinds):
                continue
            where = kernel_file(used)
            if where != candidate_file and not where.startswith(triton_dir):
                problem = (f"kernel {name!r} calls the Triton function {owner!r} defined in {where}; "
                           "kernels must be the candidate's own")
                if problem not in problems:
                    problems.append(problem)
    return problems


def _referenced_globals(fn: Any) -> list[tuple[Any, str]]:
    if fn is None:
        return []
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if inspect.iscode(c))
    out = []
    scope = fn.__globals__
    for name in names:
        value = scope.get(name)
        if value is None:
            continue
        if inspect.ismodule(value):
            for attr in names:
                member = getattr(value, attr, None)
                if member is not None:
                    out.append((member, f"{name}.{attr}"))
        else:
            out.append((value, name))
    return out


def _module_problems(name: str, obj: Any, candidate_file: str, module_name: str) -> list[str]:
    """Why an ``nn.Module`` entry point is not the candidate's own module class: not a class,
    not a ``torch.nn.Module``, defined elsewhere, or computing through a ``forward`` or
    ``__call__`` it inherits from another file (``class ModelNew(Model): pass``)."""
    import torch

    if not inspect.isclass(obj) or not issubclass(obj, torch.nn.Module):
        return [f"entry point {name!r} must be a torch.nn.Module subclass, not "
                f"{type(obj).__name__ if not inspect.isclass(obj) else obj.__name__}"]
    if getattr(obj, "__module__", None) != module_name:
        return [f"entry point {name!r} is not defined in the candidate's own code"]
    problems = []
    for method in ("forward", "__call__"):
        owner = next((c for c in obj.__mro__ if method in vars(c)), None)
        if owner is None or owner is torch.nn.Module:
            if method == "forward":
                problems.append(f"entry point {name!r} defines no forward()")
            continue
        code = getattr(inspect.unwrap(vars(owner)[method]), "__code__", None)
        where = os.path.abspath(code.co_filename) if code is not None else "?"
        if where != candidate_file:
            problems.append(f"entry point {name!r} takes its {method}() from {owner.__name__} "
                            f"in {where}, not from the candidate's own code")
    return problems


def _defined_in(obj: Any, candidate_file: str, module_name: str) -> bool:
    """Whether a callable entry point is the candidate's own.

    A function counts by the file its code comes from; a bound method (such as an
    autograd alias ``square = _Square.apply``) or a callable object by the module of
    the class it belongs to.
    """
    if inspect.ismethod(obj):
        owner = obj.__self__
        cls = owner if inspect.isclass(owner) else type(owner)
        return getattr(cls, "__module__", None) == module_name
    target = inspect.unwrap(obj)
    if inspect.isfunction(target):
        return os.path.abspath(target.__code__.co_filename) == candidate_file
    if inspect.isclass(target):
        return getattr(target, "__module__", None) == module_name
    return getattr(type(target), "__module__", None) == module_name


def report(verdict: Verdict, problems: list[str]) -> None:
    """Fail the candidate at stage ``contract`` for each of ``problems``."""
    for problem in problems:
        verdict.fail("contract", problem)
