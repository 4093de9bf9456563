"""Check: the candidate leaves its process as it found it.

A candidate that replaces what the judge's trusted code relies on in its child
(torch's comparison and allocation helpers, CUDA events and synchronisation,
clocks, Triton's launch and benchmark paths, the harness helpers, the judge's
own modules there), changes the import machinery, installs a trace or profile
function, sets one of Triton's runtime hooks (which reach every launch and
compile of its process) or leaves a Python thread running, could fool every
check made in that process.

Detection (child): an :class:`IdentitySnapshot` (the identities of the object,
its code object and its defaults, of ~150 functions, the harness's and the
judge's members, ``sys.meta_path``, the trace and profile functions, Triton's
runtime hooks) taken before the candidate is imported, and a
:class:`ThreadWatch` of the threads alive then; both are compared after the
import, after every run and after every block of timed calls. Their sentences
travel as the ``violations`` of the ``imported`` frame
(:class:`~geak_evaluator_triton.protocol.ImportedFrame`), of each run's checks
(:class:`~geak_evaluator_triton.protocol.RunChecks`) and of each ``block``
(:class:`~geak_evaluator_triton.protocol.BlockChecks`).

Interpretation (judge, :func:`report`): each sentence rejects the candidate
(stage ``anticheat``), once per sentence.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict

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
    "triton.runtime.autotuner.Autotuner._bench", "triton.runtime.autotuner.Autotuner.prune_configs",
    "triton.runtime.autotuner.Heuristics.run",
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

# The judge's in-process checks, by the label their members get (``judge.LaunchLog``,
# ``judge.torch_compute.ComputeMonitor``), then the rest of the judge's trusted code in the
# child: the timed loop, the frames, the runs.
GUARD_MODULES = {
    "judge": "geak_evaluator_triton.guards",
    "judge.autotuning": "geak_evaluator_triton.autotuning",
    "judge.contract": "geak_evaluator_triton.checks.contract",
    "judge.input_mutation": "geak_evaluator_triton.checks.input_mutation",
    "judge.launches": "geak_evaluator_triton.checks.launches",
    "judge.output_objects": "geak_evaluator_triton.checks.output_objects",
    "judge.tampering": "geak_evaluator_triton.checks.tampering",
    "judge.torch_compute": "geak_evaluator_triton.checks.torch_compute",
}
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
        for label, name in GUARD_MODULES.items():
            watch_module(self, label, importlib.import_module(name))
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


class ThreadWatch:
    """The Python threads alive before the candidate was imported."""

    def __init__(self) -> None:
        self.baseline = {t.ident for t in threading.enumerate()}

    def new_threads(self) -> list[str]:
        return [
            f"{t.name} ({'daemon' if t.daemon else 'non-daemon'})"
            for t in threading.enumerate()
            if t.ident not in self.baseline and t.is_alive()
        ]


def violations(snapshot: IdentitySnapshot, threads: ThreadWatch) -> list[str]:
    """What the candidate changed in its process since the snapshot: sentences that follow
    "the candidate" (empty when nothing)."""
    problems = snapshot.changed()
    left = threads.new_threads()
    if left:
        problems.append(f"left Python thread(s) running: {', '.join(left)}")
    return problems


def report(verdict: Verdict, when: str, problems: list[str], once: bool = True) -> None:
    """Reject for each of ``problems`` (``violations``'s sentences), found ``when`` ("at
    import", "during stage1 case ...", "while being timed on case ..."); ``once``: each
    sentence counts once over the whole verdict."""
    for problem in problems:
        verdict.fail("anticheat", f"{when}, the candidate {problem}", key=f"violation:{problem}" if once else None)
