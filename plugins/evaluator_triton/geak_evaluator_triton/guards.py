"""Checks that run inside the candidate's child process.

Everything here is installed by trusted code *before* the candidate is
imported, and re-verified after import and after every run:

* ``LaunchLog``: every Triton launch (``JITFunction.run`` on a GPU,
  ``InterpretedFunction.run`` under the interpreter) is recorded with the file
  that defines the kernel, so the judge knows whether the candidate's own
  kernels did the work.
* ``ComputeMonitor``: a ``TorchDispatchMode`` + ``TorchFunctionMode`` pair,
  active only while the candidate's entry points run, that records tensor
  operations *called from the candidate's file* other than allocation, views,
  fills and scalar reads (plus copies, for wrapper entry points), and escapes
  to numpy (``.numpy()``, ``.tolist()``, ``__array__``).
* ``IdentitySnapshot``: identities (object and code object) of the functions
  a candidate could replace to fool the judge: torch/numpy comparison and
  allocation helpers, CUDA events and synchronisation, clocks, Triton's
  launch and benchmark paths, the harness helpers, and these guards.
* ``ThreadWatch``: Python threads the candidate left running.

A candidate that takes over its own process can in principle defeat any
in-process check; these guards raise the bar against the cheats generated
code actually attempts, and the decisive comparisons happen in the judge's
process, which never runs candidate code (see docs/evaluator.md).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

GUARDS_FILE = os.path.abspath(__file__)

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


def _package_dir(name: str) -> str:
    module = importlib.import_module(name)
    return os.path.dirname(os.path.abspath(module.__file__ or ""))


# ---------------------------------------------------------------------------
# Launch log
# ---------------------------------------------------------------------------


def base_function(kernel: Any) -> Any:
    """The Python function under a chain of Autotuner / Heuristics / JIT wrappers."""
    obj = kernel
    for _ in range(16):
        if inspect.isfunction(obj):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def kernel_file(kernel: Any) -> str:
    fn = base_function(kernel)
    code = getattr(fn, "__code__", None)
    return os.path.abspath(code.co_filename) if code is not None else "?"


class LaunchLog:
    """Records every top-level Triton launch in this process."""

    def __init__(self) -> None:
        self.launches: list[tuple[str, str, bool]] = []  # (kernel, defining file, from an entry point)
        self.enabled = True
        self.inside_entry_point = lambda: False

    def mark(self) -> int:
        return len(self.launches)

    def since(self, mark: int) -> list[tuple[str, str, bool]]:
        return self.launches[mark:]

    def install(self) -> None:
        from triton.runtime.jit import JITFunction

        targets: list[type] = [JITFunction]
        if os.environ.get("TRITON_INTERPRET") == "1":
            from triton.runtime.interpreter import InterpretedFunction

            targets.append(InterpretedFunction)
        log = self
        for cls in targets:
            original = cls.run

            def counted_run(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if not kwargs.get("warmup", False) and log.enabled:
                    fn = base_function(self)
                    log.launches.append(
                        (getattr(fn, "__name__", "?"), kernel_file(self), log.inside_entry_point())
                    )
                return _original(self, *args, **kwargs)

            counted_run.__qualname__ = f"{cls.__name__}.run"
            cls.run = counted_run  # type: ignore[method-assign]


def install_interpreter_autotune_shim() -> None:
    """Under the interpreter there is no GPU timer: autotuning keeps the first (pruned) config.

    Triton's autotuner would otherwise fail looking for an active GPU driver.
    """
    from triton.runtime.autotuner import Autotuner

    def first_config_wins(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]

    Autotuner._bench = first_config_wins  # type: ignore[method-assign]


# ---------------------------------------------------------------------------
# Torch compute monitor
# ---------------------------------------------------------------------------


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
        self._torch_dir = _package_dir("torch") + os.sep
        self._triton_dir = _package_dir("triton") + os.sep
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


# ---------------------------------------------------------------------------
# Contract checks on the imported candidate
# ---------------------------------------------------------------------------


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
    triton_dir = _package_dir("triton") + os.sep
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


# ---------------------------------------------------------------------------
# Identity snapshot
# ---------------------------------------------------------------------------

PROTECTED = (
    "torch.allclose", "torch.isclose", "torch.equal", "torch.testing.assert_close", "torch.empty",
    "torch.empty_like", "torch.zeros", "torch.zeros_like", "torch.ones", "torch.full",
    "torch.randn", "torch.rand", "torch.randint", "torch.randperm", "torch.manual_seed",
    "torch.Generator", "torch.Tensor", "torch.Tensor.copy_", "torch.Tensor.clone",
    "torch.Tensor.fill_", "torch.Tensor.zero_", "torch.Tensor.to", "torch.Tensor.cpu",
    "torch.Tensor.contiguous", "torch.Tensor.__setitem__", "torch.Tensor.__getitem__",
    "torch.Tensor.data_ptr", "torch.Tensor.numpy", "torch.Tensor.view", "torch.Tensor.item",
    "torch.Tensor.__eq__", "torch.Tensor.equal", "torch.cuda.synchronize", "torch.cuda.Event",
    "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize",
    "torch.cuda.current_stream", "torch.cuda.Stream", "torch.cuda.is_available",
    "torch.cuda.empty_cache", "torch.utils._python_dispatch.TorchDispatchMode",
    "torch.overrides.TorchFunctionMode", "numpy.allclose", "numpy.array_equal",
    "numpy.testing.assert_allclose", "triton.jit", "triton.autotune", "triton.heuristics",
    "triton.Config", "triton.cdiv", "triton.next_power_of_2", "triton.testing.do_bench",
    "triton.testing.do_bench_cudagraph", "triton.runtime.jit.JITFunction",
    "triton.runtime.jit.JITFunction.run", "triton.runtime.jit.KernelInterface.__getitem__",
    "triton.runtime.autotuner.Autotuner", "triton.runtime.autotuner.Autotuner.run",
    "triton.runtime.autotuner.Autotuner._bench", "triton.runtime.autotuner.Heuristics.run",
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "time.sleep", "threading.Thread.start",
    "os.urandom", "secrets.randbelow", "secrets.randbits", "torch.Generator.manual_seed",
    "torch.randint", "torch.unravel_index",
    "threading.enumerate", "threading.active_count", "hashlib.sha256",
    "geak_core.api.harness.poisoned", "geak_core.api.harness.generator", "geak_core.api.harness.randn",
    "geak_core.api.harness.rand", "geak_core.api.harness.randint", "geak_core.api.harness.apply_outliers",
    "geak_core.api.harness.launch", "geak_core.api.harness.call", "geak_core.api.harness.cdiv",
    "geak_core.api.harness._autotuned_keys", "geak_core.api.harness.sanitize_autotune_configs",
    "geak_core.api.harness.Harness",
)
INTERPRETER_PROTECTED = (
    "triton.runtime.interpreter.InterpretedFunction",
    "triton.runtime.interpreter.InterpretedFunction.run",
    "triton.runtime.interpreter.GridExecutor.__call__",
)
PROTECTED_BUILTINS = (
    "isinstance", "issubclass", "getattr", "setattr", "hasattr", "type", "id", "len", "range",
    "callable", "open", "__import__", "compile", "exec", "eval", "print", "min", "max", "sum",
    "abs", "any", "all", "sorted", "repr", "str", "float", "int", "bool",
)
PROTECTED_MODULES = (
    "torch", "torch.cuda", "torch.testing", "triton", "triton.language", "triton.testing",
    "triton.runtime.jit", "triton.runtime.autotuner", "numpy", "time", "threading", "os", "secrets",
    "geak_core.api.harness", "geak_core.api.tasks", "geak_core.kit.sandbox", "geak_core.kit.tensorio",
)


JUDGE_MODULES = ("geak_evaluator_triton.timed_calls", "geak_evaluator_triton.child_jobs",
                 "geak_evaluator_triton.child_common", "geak_core.kit.sandbox")


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        module = sys.modules.get(name)
        if module is None and cut > 1:
            continue
        if module is None:
            try:
                module = importlib.import_module(name)
            except ImportError:
                return None
        obj: Any = module
        for attr in parts[cut:]:
            try:
                obj = inspect.getattr_static(obj, attr)
            except AttributeError:
                return None
        return obj
    return None


def _fingerprint(obj: Any) -> tuple[int, int, int]:
    target = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    code = getattr(target, "__code__", None)
    defaults = getattr(target, "__defaults__", None)
    return id(obj), id(code) if code is not None else 0, id(defaults) if defaults is not None else 0


class IdentitySnapshot:
    """Fingerprints of everything a candidate must leave alone."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[int, int, int]] = {}
        self.objects: dict[str, Any] = {}  # keeps them alive so ids stay meaningful

    def add(self, label: str, obj: Any) -> None:
        if obj is None:
            return
        self.objects[label] = obj
        self.items[label] = _fingerprint(obj)

    def take_defaults(self, interpreter: bool) -> None:
        for dotted in PROTECTED + (INTERPRETER_PROTECTED if interpreter else ()):
            self.add(dotted, _resolve(dotted))
        for name in PROTECTED_BUILTINS:
            self.add(f"builtins.{name}", getattr(builtins, name, None))
        for name in PROTECTED_MODULES:
            self.add(f"sys.modules[{name!r}]", sys.modules.get(name))
        watch_module(self, "judge", sys.modules[__name__])
        for name in JUDGE_MODULES:  # the timed loop, the frames, the runs: trusted code in this process
            watch_module(self, name.rsplit(".", 1)[-1], importlib.import_module(name))
        self.add("sys.meta_path", tuple(sys.meta_path))
        self._meta_path = [id(f) for f in sys.meta_path]
        self._trace = (id(sys.gettrace()), id(sys.getprofile()))
        self._hooks = triton_hooks()

    def changed(self) -> list[str]:
        problems = []
        for label, fingerprint in self.items.items():
            if label == "sys.meta_path":
                continue
            current = _resolve_label(label, self.objects[label])
            if current is None or _fingerprint(current) != fingerprint:
                problems.append(f"replaced or modified {label}")
        if [id(f) for f in sys.meta_path] != getattr(self, "_meta_path", [id(f) for f in sys.meta_path]):
            problems.append("modified the import machinery (sys.meta_path)")
        if (id(sys.gettrace()), id(sys.getprofile())) != getattr(self, "_trace", (0, 0)):
            problems.append("installed a trace or profile function")
        hooks = getattr(self, "_hooks", {})
        problems += [f"replaced or modified triton.knobs.runtime.{name}" for name, found in triton_hooks().items()
                     if hooks.get(name) != found]
        return problems


TRITON_HOOKS = ("launch_enter_hook", "launch_exit_hook", "jit_cache_hook", "jit_post_compile_hook")


def triton_hooks() -> dict[str, int]:
    """Identities of Triton's runtime hooks (None too): a candidate that sets one reaches every
    launch and compile of its process."""
    try:
        import triton

        runtime = triton.knobs.runtime
    except (ImportError, AttributeError):
        return {}
    return {name: id(getattr(runtime, name, None)) for name in TRITON_HOOKS}


_LABEL_SOURCES: dict[str, Any] = {}


def _resolve_label(label: str, original: Any) -> Any:
    if label.startswith("builtins."):
        return getattr(builtins, label.split(".", 1)[1], None)
    if label.startswith("sys.modules["):
        name = label[len("sys.modules['"):-2]
        return sys.modules.get(name)
    owner = _LABEL_SOURCES.get(label)
    if owner is not None:
        return owner()
    return _resolve(label)


def watch_module(snapshot: IdentitySnapshot, label: str, module: Any) -> None:
    """Snapshot a module's members and remember how to look them up again."""
    for name, value in list(vars(module).items()):
        if inspect.isfunction(value) or inspect.isclass(value) or hasattr(value, "run"):
            key = f"{label}.{name}"
            snapshot.add(key, value)
            _LABEL_SOURCES[key] = lambda module=module, name=name: vars(module).get(name)
            if inspect.isclass(value):
                for attr, member in list(vars(value).items()):
                    if inspect.isfunction(member):
                        sub = f"{key}.{attr}"
                        snapshot.add(sub, member)
                        _LABEL_SOURCES[sub] = (
                            lambda cls=value, attr=attr: vars(cls).get(attr)
                        )


# ---------------------------------------------------------------------------
# Threads and inputs
# ---------------------------------------------------------------------------


class ThreadWatch:
    def __init__(self) -> None:
        self.baseline = {t.ident for t in threading.enumerate()}

    def new_threads(self) -> list[str]:
        return [
            f"{t.name} ({'daemon' if t.daemon else 'non-daemon'})"
            for t in threading.enumerate()
            if t.ident not in self.baseline and t.is_alive()
        ]


def snapshot_inputs(inputs: Any) -> Any:
    """Bitwise copies of every tensor in ``inputs`` (to detect mutation)."""
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.detach().clone()
    if isinstance(inputs, dict):
        return {k: snapshot_inputs(v) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(snapshot_inputs(v) for v in inputs) if isinstance(inputs, list) else tuple(
            snapshot_inputs(v) for v in inputs
        )
    return None


def mutated_inputs(before: Any, after: Any, path: str = "") -> list[str]:
    import torch

    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return [path or "input"]
        if before.numel() == 0:
            return []
        a = after.detach().contiguous().reshape(-1).view(torch.uint8)
        b = before.contiguous().reshape(-1).view(torch.uint8)
        return [] if torch.equal(a, b) else [path or "input"]
    if isinstance(before, dict):
        out: list[str] = []
        for key, value in before.items():
            out += mutated_inputs(value, after.get(key) if isinstance(after, dict) else None,
                                  f"{path}.{key}" if path else str(key))
        return out
    if isinstance(before, (list, tuple)):
        out = []
        for i, value in enumerate(before):
            other = after[i] if isinstance(after, (list, tuple)) and i < len(after) else None
            out += mutated_inputs(value, other, f"{path}[{i}]")
        return out
    return []
