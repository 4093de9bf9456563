"""Check: the entry points compute with the candidate's Triton kernels, not with torch or numpy.

Under a strict protocol (``Task.forbid_torch_compute``) the work must be done by
the candidate's kernels: a wrapper, an autotune or heuristics hook, or (under the
interpreter) a kernel body that computes with torch or escapes to numpy is not a
Triton kernel.

Detection (child): a :class:`ComputeMonitor` (a ``TorchDispatchMode`` and a
``TorchFunctionMode``) active only while the candidate's entry points run
(:func:`guard_entry_points`, in every correctness run and every timed call)
records tensor operations *called from the candidate's file* other than
allocation, views, fills and scalar reads (plus copies, for wrapper entry
points), and escapes to numpy (``.numpy()``, ``.tolist()``, ``__array__``).
They travel as ``compute`` in each run's checks
(:class:`~geak_evaluator_triton.protocol.RunChecks`) and in each ``block``
(:class:`~geak_evaluator_triton.protocol.BlockChecks`).

Interpretation (judge, :func:`report`): under a strict protocol, any such
operation rejects the candidate (stage ``anticheat``), reported once.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from geak_evaluator_triton.guards import package_dir

if TYPE_CHECKING:
    from geak_core.api.tasks import Task
    from geak_evaluator_triton.verdict import Verdict

# Tensor operations that create, describe or re-view memory without computing from data.
ALLOCATION_AND_VIEW_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like",
    "new_full", "fill", "fill_", "zero_", "scalar_tensor", "arange", "lift_fresh",
    "lift_fresh_copy", "resize_", "set_", "_local_scalar_dense", "detach", "detach_", "alias",
    "view", "_unsafe_view", "view_as", "reshape", "_reshape_alias", "as_strided", "t",
    "transpose", "permute", "expand", "expand_as", "unsqueeze", "squeeze", "select", "slice",
    "narrow", "split", "split_with_sizes", "unbind", "chunk", "flatten", "unflatten", "movedim",
    "diagonal", "view_as_real", "view_as_complex", "_conj", "real", "imag", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "record_stream",
    "_has_compatible_shallow_copy_type", "_pin_memory", "is_pinned", "dim", "size", "stride",
    "numel", "is_contiguous", "storage_offset", "_nested_tensor_size", "is_nonzero",
})
# Copies and dtype conversions: allowed in Python wrapper entry points (they stage data for
# kernels), counted as compute where the candidate only supplies kernels.
COPY_OPS = frozenset({"copy_", "_to_copy", "clone", "contiguous", "_copy_from", "to",
                      "_copy_from_and_resize"})
NUMPY_ESCAPES = frozenset({"numpy", "tolist", "__array__", "__dlpack__", "__array_wrap__"})
# Entry points that are Python code staging data for kernels (copies allowed there).
WRAPPER_KINDS = ("function", "nn.Module")


class ComputeMonitor:
    """Records tensor computation called from the candidate's own file."""

    def __init__(self, candidate_file: str, allow_copies: bool, gpu: bool) -> None:
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        self.candidate_file = os.path.abspath(candidate_file)
        self.allow_copies = allow_copies
        self.gpu = gpu
        self.events: list[str] = []
        self.depth = 0
        self._torch_dir = package_dir("torch") + os.sep
        self._triton_dir = package_dir("triton") + os.sep
        monitor = self

        class _Dispatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                kwargs = kwargs or {}
                monitor._on_op(func, args, kwargs)
                return func(*args, **kwargs)

        class _Function(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                name = getattr(func, "__name__", "")
                if name in NUMPY_ESCAPES:
                    where = monitor._candidate_frame()
                    if where:
                        monitor.events.append(f"Tensor.{name}() at {where}")
                return func(*args, **(kwargs or {}))

        self._dispatch_cls = _Dispatch
        self._function_cls = _Function
        self._warm_up()

    @classmethod
    def for_entry_points(cls, file: str, entry_points: list[Any], gpu: bool) -> ComputeMonitor:
        """The monitor of ``file``'s ``entry_points``: copies stage data, not compute, where one
        of them is a Python wrapper function."""
        return cls(file, allow_copies=any(ep.kind in WRAPPER_KINDS for ep in entry_points), gpu=gpu)

    def _warm_up(self) -> None:
        """Enter the modes once: the first entry imports parts of torch that rebind functions
        (``torch.manual_seed`` among them), which must happen before the identity snapshot."""
        import torch

        with self.active():
            torch.empty(1).zero_().numpy()
        self.events.clear()

    def _candidate_frame(self) -> str | None:
        frame = sys._getframe(2)
        for _ in range(200):
            if frame is None:
                return None
            filename = frame.f_code.co_filename
            if filename == self.candidate_file:
                return f"line {frame.f_lineno}"
            if filename.startswith(self._triton_dir):
                return None  # Triton's own machinery (interpreter, autotuner) on the candidate's behalf
            frame = frame.f_back
        return None

    def _on_op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        if name in ALLOCATION_AND_VIEW_OPS:
            return
        if name in COPY_OPS and self.allow_copies and not self._crosses_devices(name, args, kwargs):
            return
        where = self._candidate_frame()
        if where:
            self.events.append(f"torch op aten.{name} at {where}")

    def _crosses_devices(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if not self.gpu or not args:
            return False
        source = getattr(args[0], "device", None)
        if name == "_to_copy" and kwargs.get("device") is not None:
            return getattr(kwargs["device"], "type", None) != getattr(source, "type", None)
        if name == "copy_" and len(args) > 1:
            other = getattr(args[1], "device", None)
            return getattr(other, "type", None) != getattr(source, "type", None)
        return False

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        if self.depth:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
            return
        self.depth = 1
        try:
            with self._function_cls(), self._dispatch_cls():
                yield
        finally:
            self.depth = 0

    def take(self) -> list[str]:
        events, self.events = self.events, []
        return events


class GuardedKernel:
    """A kernel entry point whose launches run under the compute monitor."""

    def __init__(self, kernel: Any, monitor: ComputeMonitor) -> None:
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_monitor", monitor)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_kernel"), name)

    def __getitem__(self, grid: Any) -> Any:
        kernel = object.__getattribute__(self, "_kernel")
        monitor = object.__getattribute__(self, "_monitor")

        def launch(*args: Any, **kwargs: Any) -> Any:
            with monitor.active():
                return kernel[grid](*args, **kwargs)

        return launch

    def run(self, *args: Any, **kwargs: Any) -> Any:
        with object.__getattribute__(self, "_monitor").active():
            return object.__getattribute__(self, "_kernel").run(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_kernel")(*args, **kwargs)


class GuardedModule:
    """What the harness sees: the candidate module with monitored entry points."""

    def __init__(self, module: Any, wrapped: dict[str, Any]) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_wrapped", wrapped)

    def __getattr__(self, name: str) -> Any:
        wrapped = object.__getattribute__(self, "_wrapped")
        if name in wrapped:
            return wrapped[name]
        return getattr(object.__getattribute__(self, "_module"), name)

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_module"))


def guard_entry_points(module: Any, entry_points: list[Any], monitor: ComputeMonitor) -> GuardedModule:
    wrapped: dict[str, Any] = {}
    for ep in entry_points:
        obj = getattr(module, ep.name)
        if ep.kind == "triton.jit":
            wrapped[ep.name] = GuardedKernel(obj, monitor)
        elif ep.kind == "nn.Module":
            wrapped[ep.name] = _guarded_module_class(obj, monitor)
        else:
            wrapped[ep.name] = _guarded_function(obj, monitor)
    return GuardedModule(module, wrapped)


def _guarded_function(fn: Any, monitor: ComputeMonitor) -> Any:
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with monitor.active():
            return fn(*args, **kwargs)

    guarded.__name__ = getattr(fn, "__name__", "entry")
    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded


class GuardedModel:
    """An instance of a candidate's ``nn.Module`` entry point as the harness holds it: every
    call (the module's ``__call__``, hooks and ``forward``, whatever the class overrides)
    runs under the compute monitor. Construction and ``to``/``eval`` (moving and casting
    parameters, before any input exists) do not: initialising weights is not the task's
    computation."""

    def __init__(self, module: Any, monitor: ComputeMonitor) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_monitor", monitor)

    @property
    def module(self) -> Any:
        return object.__getattribute__(self, "_module")

    def to(self, *args: Any, **kwargs: Any) -> GuardedModel:
        moved = self.module.to(*args, **kwargs)
        return GuardedModel(moved, object.__getattribute__(self, "_monitor"))

    def eval(self) -> GuardedModel:
        self.module.eval()
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with object.__getattribute__(self, "_monitor").active():
            return self.module(*args, **kwargs)


def _guarded_module_class(cls: Any, monitor: ComputeMonitor) -> Any:
    def construct(*args: Any, **kwargs: Any) -> GuardedModel:
        return GuardedModel(cls(*args, **kwargs), monitor)

    construct.__name__ = getattr(cls, "__name__", "ModelNew")
    construct.__wrapped__ = cls  # type: ignore[attr-defined]
    return construct


def report(verdict: Verdict, when: str, compute: list[str], task: Task) -> None:
    """Reject, where ``task`` forbids torch compute, when ``compute`` recorded any ``when``."""
    if compute and task.forbid_torch_compute:
        verdict.fail("anticheat", f"{when}, the entry point computed with torch/numpy instead of a "
                     f"Triton kernel ({', '.join(compute[:3])})", key="compute")
