"""Running a GEAK-eval performance script (``<name>_perf.py``) without GEAK-eval.

The script imports the operator under test by the task's file stem (``from
add_example import add_wrapper``, ``from TritonBench_v1.add_example import
...``, or the packaged reference ``from geak_eval.data.TritonBench.data.
TritonBench_G_v1.add_example import ... as ..._ref``) and its base class from
``geak_eval.perf.performance_utils`` / ``performance_utils``. While the script
executes, the harness puts into ``sys.modules``:

* under every name of the base module, our ``perf_base``;
* under every name of the operator's module, a module whose attributes
  forward to the module being judged *at call time*, so one loaded script
  serves whichever module the harness runs (reference or candidate, each in
  its own process);
* empty packages for the parents of those dotted names.

Everything is put back afterwards. The script's ``__main__`` block does not run.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.astutil import parse_source

from geak_suite_tritonbench import perf_base
from geak_suite_tritonbench.seeding import seed_all

BASE_MODULE_NAMES = ("geak_eval.perf.performance_utils", "performance_utils")
DATA_PACKAGE_MARKERS = ("TritonBench", "geak_eval")
_MISSING = object()


class PerfScriptError(Exception):
    """The script could not be loaded or does not define what the harness needs."""


class _Forward:
    """Stands for ``<module under test>.<name>`` and resolves it when used."""

    def __init__(self, target: Callable[[], Any], name: str) -> None:
        self._target = target
        self._name = name

    def _resolve(self) -> Any:
        module = self._target()
        if module is None:
            raise PerfScriptError(f"no module is being judged to take {self._name!r} from")
        return getattr(module, self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._resolve()(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._resolve(), attr)


class _ModuleUnderTest(types.ModuleType):
    def __init__(self, name: str, target: Callable[[], Any]) -> None:
        super().__init__(name)
        self._target = target

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Forward(self._target, attr)


def _imported_modules(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _is_operator_module(name: str, stem: str,
                        markers: tuple[str, ...] = DATA_PACKAGE_MARKERS) -> bool:
    if name == stem:
        return True
    head, _, last = name.rpartition(".")
    return last == stem and any(marker in head for marker in markers)


def _shims(tree: ast.Module, stem: str, target: Callable[[], Any],
           markers: tuple[str, ...] = DATA_PACKAGE_MARKERS) -> dict[str, types.ModuleType]:
    shims: dict[str, types.ModuleType] = {}
    under_test = _ModuleUnderTest(stem, target)
    for name in _imported_modules(tree):
        if name.rpartition(".")[2] == "performance_utils" or name in BASE_MODULE_NAMES:
            shims[name] = perf_base
        elif _is_operator_module(name, stem, markers):
            shims[name] = under_test
    for name in list(shims):
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent, child = ".".join(parts[:i]), parts[i]
            if parent not in shims:
                package = types.ModuleType(parent)
                package.__path__ = []  # type: ignore[attr-defined]
                shims[parent] = package
            if not isinstance(shims[parent], _ModuleUnderTest):
                setattr(shims[parent], child, shims[".".join(parts[: i + 1])])
    return shims


def tensors_of(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    return []


def describe(value: Any) -> Any:
    """A JSON-serialisable description of one input (shapes and dtypes, scalars as they are)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


def main_dtype(value: Any) -> str | None:
    """The dtype whose peak applies: the first floating-point input's, else the first one's."""
    tensors = tensors_of(value)
    for t in tensors:
        if t.dtype.is_floating_point:
            return str(t.dtype).removeprefix("torch.")
    return str(tensors[0].dtype).removeprefix("torch.") if tensors else None


@dataclass
class PerfMeasures:
    flops: float | None
    bytes: float | None
    note: str = ""


class PerfScript:
    """One loaded ``<name>_perf.py``: its inputs, its call and its formulas.

    ``markers``: a dotted module name ending in ``stem`` is the operator's module when its
    package part contains one of them (other benchmarks' scripts import from their own
    data packages).
    """

    def __init__(self, path: Path, stem: str, target: Callable[[], Any],
                 markers: tuple[str, ...] = DATA_PACKAGE_MARKERS) -> None:
        self.path = path
        self.stem = stem
        self.markers = markers
        self.metrics = self._load(target)

    def _load(self, target: Callable[[], Any]) -> Any:
        where = str(self.path)
        try:
            source = self.path.read_text(encoding="utf-8")
            tree = parse_source(source, filename=where)
        except (OSError, UnicodeDecodeError) as exc:
            raise PerfScriptError(f"{where}: cannot be read ({exc})") from None
        except SyntaxError as exc:
            raise PerfScriptError(f"{where}:{exc.lineno}: syntax error: {exc.msg}") from None
        shims = _shims(tree, self.stem, target, self.markers)
        saved = {name: sys.modules.get(name, _MISSING) for name in shims}
        namespace: dict[str, Any] = {
            "__name__": f"geak_tritonbench_perf_{self.stem}",
            "__file__": where,
            "__builtins__": __builtins__,
        }
        sys.modules.update(shims)
        try:
            exec(compile(tree, where, "exec"), namespace)
        except Exception as exc:
            raise PerfScriptError(f"{where}: failed to load: {type(exc).__name__}: {exc}") from exc
        finally:
            for name, module in saved.items():
                if module is _MISSING:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module  # type: ignore[assignment]
        cls = namespace.get("performance_metrics")
        if not (isinstance(cls, type) and issubclass(cls, perf_base.Performance_Metrics)):
            raise PerfScriptError(
                f"{where}: defines no class 'performance_metrics' deriving from Performance_Metrics"
            )
        try:
            return cls()
        except Exception as exc:
            raise PerfScriptError(f"{where}: performance_metrics() failed: {exc}") from exc

    def inputs(self, seed: int) -> list[Any]:
        """Every input the script lists, drawn after seeding all generators with ``seed``."""
        seed_all(seed)
        self.metrics.input_tensors = []
        self.metrics.get_input_tensors()
        return list(self.metrics.input_tensors)

    def abstract_inputs(self, seed: int) -> list[Any] | None:
        """The script's inputs drawn on the meta device: shapes and dtypes, no data, no time
        (listing the cases needs no values; drawing every input of a script on the CPU took
        up to 9 s). None where the script cannot draw there (it reads values or moves
        tensors between devices while drawing)."""
        import torch

        try:
            with torch.device("meta"):
                return self.inputs(seed)
        except Exception:
            return None

    def to_device(self, raw: Any) -> Any:
        return self.metrics.to_cuda(raw)

    def call(self, prepared: Any) -> Any:
        return self.metrics.call_op(prepared)

    def measures(self, raw: Any, device_copy: Any = _MISSING) -> PerfMeasures:
        """FLOPs and bytes from the script's formulas, evaluated at a runtime of 1 ms.

        ``get_gbps(x, 1.0)`` is bytes / 1e-3 s / 1e9, so bytes = value * 1e6;
        ``get_tflops(x, 1.0)`` is flops / 1e-3 s / 1e12, so flops = value * 1e9.
        The formulas get the raw input first, the device copy if that fails.
        """
        attempts = [raw] if device_copy is _MISSING else [raw, device_copy]
        notes: list[str] = []

        def evaluate(method: str, scale: float) -> float | None:
            error = ""
            for attempt in attempts:
                try:
                    value = getattr(self.metrics, method)(attempt, 1.0)
                except Exception as exc:
                    error = f"{method}: {type(exc).__name__}: {exc}"
                    continue
                if value is None:
                    return None
                try:
                    return float(value) * scale
                except (TypeError, ValueError):
                    notes.append(f"{method} returned {type(value).__name__}")
                    return None
            notes.append(error)
            return None

        return PerfMeasures(
            flops=evaluate("get_tflops", 1e9),
            bytes=evaluate("get_gbps", 1e6),
            note="; ".join(notes),
        )
