"""The harness of every TritonBench-G task: run the task's own test on a module.

The original judge appended a task's test part to the candidate's code and ran
the result. This harness does the same inside the judge's child process: the
test part is executed in a copy of the global namespace of the module under
judgement (the reference's kernel part, or the candidate), in which the entry
points are the objects the judge hands over (monitored wrappers, for a
candidate); then the test function is called and what it returns becomes
``outputs["result"]``. The reference's process and the candidate's process
both seed Python's, NumPy's and torch's generators right before the call, so
both tests draw the same inputs.

``Task.extra["protocol"]`` picks how (see ``suite``):

* ``published`` (TritonBench's and GEAK-eval's way): the candidate and the
  test share one module namespace, so whatever the test part defines or
  imports (``import torch``) is also a global of the module under judgement,
  as when the two are one file; the generators are seeded as GEAK-eval leaves
  them when the test runs (``seeding.seed_as_imported``: the case's seed, the
  protocol's 42 among the task's seeds, then the module's own module-level
  seeding calls); performance-script inputs are timing-only cases
  (``Case.checked = False``).
* ``strict``: the test part's names stay in the copy, the generators are
  seeded with the case's seed alone, and the performance-script outputs are
  compared too.

Cases:

* ``test`` (both modes): the task's test. Under the CPU interpreter its
  ``'cuda'`` device strings are rewritten (see ``rewrite``). When the task has
  no performance script it is also the timed case on a GPU, a weaker
  measurement: the timed call includes building the inputs.
* ``perf_<i>`` (full mode, when ``golden_metrics/<name>_perf.py`` exists): the
  script's i-th input; ``run`` is the script's ``call_op`` alone. FLOPs and
  bytes come from the script's own formulas. Compared with the reference's
  output only under ``strict``.

A test result with nothing a wrong kernel would change (None, empty, only
booleans or shapes) is compared all the same; ``weak_result_reason`` tells the
judge to flag the verdict.
"""

from __future__ import annotations

import ast
import os
import sys
import types
from pathlib import Path
from typing import Any

from geak_core.api.harness import Harness as BaseHarness
from geak_core.api.tasks import Case, Task

from geak_suite_tritonbench.perf import (
    DATA_PACKAGE_MARKERS,
    PerfScript,
    PerfScriptError,
    describe,
    main_dtype,
    tensors_of,
)
from geak_suite_tritonbench.results import comparable
from geak_suite_tritonbench.results import weak_result_reason as _weak_result_reason
from geak_suite_tritonbench.rewrite import (
    DEVICE_NAME,
    align_libdevice,
    gpu_backend,
    rewrite_device_literals,
)
from geak_suite_tritonbench.seeding import module_seeding_of, seed_all, seed_as_imported
from geak_suite_tritonbench.taskfile import defined_names, parse_part, plan_test, split_source

TEST_CASE = "test"
PERF_PREFIX = "perf_"
PERF_SEEDS_KEPT = 4  # the judge runs each case for every seed: task seeds plus secret ones
TIMING_ONLY_NOTE = (
    "timed only: under the published protocol correctness is the test's result alone"
)
WEAK_TIMING_NOTE = (
    "timed: the task's whole test function, building its inputs included; a weaker "
    "measurement than a per-shape timing (no performance script for this task)"
)


class _Slot:
    """Where a tensor of a performance input goes back when the input is rebuilt."""

    def __init__(self, index: int) -> None:
        self.index = index


def _flatten(value: Any, tensors: list[Any]) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _Slot(len(tensors) - 1)
    if isinstance(value, tuple):
        return tuple(_flatten(v, tensors) for v in value)
    if isinstance(value, list):
        return [_flatten(v, tensors) for v in value]
    if isinstance(value, dict):
        return {k: _flatten(v, tensors) for k, v in value.items()}
    return value


def _rebuild(template: Any, inputs: dict[str, Any]) -> Any:
    if isinstance(template, _Slot):
        return inputs[f"arg{template.index}"]
    if isinstance(template, tuple):
        return tuple(_rebuild(v, inputs) for v in template)
    if isinstance(template, list):
        return [_rebuild(v, inputs) for v in template]
    if isinstance(template, dict):
        return {k: _rebuild(v, inputs) for k, v in template.items()}
    return template


def module_globals(module: Any) -> dict[str, Any] | None:
    """The global namespace of the module behind ``module`` (a module or a wrapper of one).

    The judge may hand the harness a proxy whose entry points are monitored;
    the proxy forwards ``__name__`` and ``__file__``, which find the module
    it wraps in ``sys.modules``.
    """
    if isinstance(module, types.ModuleType):
        return module.__dict__
    name = getattr(module, "__name__", None)
    real = sys.modules.get(name) if isinstance(name, str) else None
    if isinstance(real, types.ModuleType) and getattr(real, "__file__", None) == getattr(
        module, "__file__", None
    ):
        return real.__dict__
    return None


def namespace_for_test(module: Any, entry_points: list[str]) -> dict[str, Any]:
    """A copy of the module's globals with the entry points as ``module`` presents them."""
    found = module_globals(module)
    if found is not None:
        namespace = dict(found)
    else:
        namespace = {name: getattr(module, name) for name in dir(module)}
    for name in entry_points:
        if hasattr(module, name):
            namespace[name] = getattr(module, name)
    return namespace


def share_test_names(module: dict[str, Any], namespace: dict[str, Any],
                     before: dict[str, Any]) -> list[str]:
    """Make what the test part bound (imports, functions, constants) globals of the module.

    In the published protocol the candidate and the test are one file, so a
    candidate function may use a name only the test part imports. The entry
    points stay in the copy alone (the test part never binds them).
    """
    shared = [
        name for name, value in namespace.items()
        if name != DEVICE_NAME and (name not in before or before[name] is not value)
    ]
    for name in shared:
        module[name] = namespace[name]
    return shared


class Harness(BaseHarness):
    # packages a performance script imports the operator from (see ``perf``)
    perf_packages: tuple[str, ...] = DATA_PACKAGE_MARKERS

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.file = Path(task.extra["file"])
        perf = task.extra.get("perf_script")
        self.perf_path = Path(perf) if perf else None
        self.libdevice = task.extra.get("libdevice", "auto")
        self.published = task.extra.get("protocol", "published") == "published"
        self._device: str | None = None
        self._prepared: dict[int, tuple[Any, dict[str, Any], list[tuple[str, Any]]]] = {}
        self._aligned: set[int] = set()
        self._perf: PerfScript | None = None
        self._perf_error = ""
        self._current: Any = None  # the module a performance script's call goes to
        self._raw: dict[int, list[Any]] = {}  # the script's inputs (on the CPU) by seed
        self._templates: dict[tuple[str, int], Any] = {}
        self._module_seeding: dict[int, list[tuple[str, int]]] = {}

    # -- cases ---------------------------------------------------------------

    def cases(self, mode: str) -> list[Case]:
        if mode == "small":
            return [self._test_case(timed=False)]
        perf_cases = self._perf_cases()
        if perf_cases:
            return [self._test_case(timed=False), *perf_cases]
        note = WEAK_TIMING_NOTE
        if self._perf_error:
            note += f"; the performance script could not be used: {self._perf_error}"
        return [self._test_case(timed=True, note=note)]

    def _test_case(self, timed: bool, note: str = "") -> Case:
        return Case(
            name=TEST_CASE,
            params={"test": self.task.extra.get("test_function")},
            timed=timed,
            outliers=False,
            note=note or "the task's own test; it builds its inputs from the seed",
        )

    def _script(self) -> PerfScript | None:
        if self.perf_path is None or self._perf_error:
            return None
        if self._perf is None:
            try:
                self._perf = PerfScript(self.perf_path, self.file.stem, lambda: self._current,
                                        self.perf_packages)
            except PerfScriptError as exc:
                self._perf_error = str(exc)
                return None
        return self._perf

    def _perf_cases(self) -> list[Case]:
        script = self._script()
        if script is None:
            return []
        abstract = script.abstract_inputs(0)
        cases = self._perf_cases_from(script, abstract) if abstract is not None else None
        if cases is not None:
            return cases
        try:
            raw_inputs = self._inputs_of_script(script, 0)
        except Exception as exc:
            self._perf_error = f"get_input_tensors() failed: {type(exc).__name__}: {exc}"
            return []
        return self._perf_cases_from(script, raw_inputs) or []

    def _perf_cases_from(self, script: PerfScript, raw_inputs: list[Any]) -> list[Case] | None:
        """The cases of the script's inputs; None where inputs drawn without data (meta
        tensors) do not give a formula what it needs (the caller then draws them for real)."""
        abstract = any(t.is_meta for t in tensors_of(raw_inputs))
        on_gpu = gpu_backend() is not None
        cases = []
        for index, raw in enumerate(raw_inputs):
            measures = script.measures(raw)
            if abstract and (measures.note or (measures.flops is None and measures.bytes is None)):
                return None
            dtype = main_dtype(raw)
            if measures.flops is None and measures.bytes is None and on_gpu:
                try:
                    prepared = script.to_device(raw)  # the script builds its tensors there
                    measures = script.measures(raw, prepared)
                    dtype = dtype or main_dtype(prepared)
                except Exception:
                    pass
            note = f"input {index} of {script.path.name}"
            if measures.note:
                note += f" ({measures.note})"
            if self.published:
                note += f"; {TIMING_ONLY_NOTE}"
            cases.append(
                Case(
                    name=f"{PERF_PREFIX}{index}",
                    params={"perf_index": index, "inputs": describe(raw)},
                    flops=measures.flops,
                    bytes=measures.bytes,
                    dtype=dtype,
                    timed=True,
                    outliers=False,
                    checked=not self.published,
                    note=note,
                )
            )
        return cases

    def _inputs_of_script(self, script: PerfScript, seed: int) -> list[Any]:
        """The script lists every input at once; keep the last few seeds' lists used for
        the next cases (a hit becomes the newest)."""
        if seed in self._raw:
            self._raw[seed] = self._raw.pop(seed)
        else:
            while len(self._raw) >= PERF_SEEDS_KEPT:
                del self._raw[next(iter(self._raw))]
            self._raw[seed] = script.inputs(seed)
        return self._raw[seed]

    def prefetch(self, case: Case, seed: int) -> None:
        """Draw a performance case's inputs on the host now (the script draws all of them
        at once on the CPU: a second for large ones), so the draw holds no device."""
        if "perf_index" not in case.params:
            return
        script = self._script()
        if script is not None:
            self._inputs_of_script(script, seed)

    # -- inputs and outputs ---------------------------------------------------

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        """The seed, and for a performance case the script's input moved to ``device``."""
        self._device = device
        if "perf_index" not in case.params:
            return {"seed": seed}
        script = self._script()
        if script is None:
            raise RuntimeError(f"{case.name}: performance script unusable: {self._perf_error}")
        raw = self._inputs_of_script(script, seed)[case.params["perf_index"]]
        prepared = raw if self._interpreted() else script.to_device(raw)
        tensors: list[Any] = []
        self._templates[(case.name, seed)] = _flatten(prepared, tensors)
        return {"seed": seed, **{f"arg{i}": t for i, t in enumerate(tensors)}}

    def allocate(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        """Nothing to allocate: the test (or the script's call) allocates its own outputs."""
        return {}

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        self._align(module)
        seed = int(inputs["seed"])
        if "perf_index" in case.params:
            script = self._script()
            assert script is not None, "make_inputs ran for this case"
            argument = _rebuild(self._templates[(case.name, seed)], inputs)
            self._current = module
            seed_all(seed)
            result = script.call(argument)
        else:
            namespace, calls = self._prepare(module)
            if self.published:
                seed_as_imported(seed, self._module_seeding.get(id(module), []))
            else:
                seed_all(seed)
            values = {name: eval(code, namespace) for name, code in calls}
            result = next(iter(values.values())) if len(values) == 1 else values
        outputs["result"] = comparable(result)

    def oracle(self, case: Case, inputs: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError(
            "TritonBench tasks have no independent oracle: the reference's own test output "
            "is the expectation"
        )

    def weak_result_reason(self, result: Any) -> str | None:
        """Why a test result cannot tell right from wrong (flag the verdict), or None."""
        return _weak_result_reason(result)

    # -- preparing a module ---------------------------------------------------

    def _interpreted(self) -> bool:
        return os.environ.get("TRITON_INTERPRET") == "1" or (self._device or "").startswith("cpu")

    def _align(self, module: Any) -> None:
        if id(module) in self._aligned:
            return
        backend = None if self._interpreted() else gpu_backend()
        found = module_globals(module)
        if self.libdevice == "auto" and backend is not None and found is not None:
            align_libdevice(found, backend)
        self._aligned.add(id(module))

    def _prepare(self, module: Any) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
        """Run the test part once in a namespace built from ``module``; the test calls."""
        key = id(module)
        if key in self._prepared:
            return self._prepared[key][1], self._prepared[key][2]
        where = str(self.file)
        kernel_source, source, line = split_source(self.file.read_text(encoding="utf-8"), where)
        namespace = namespace_for_test(module, [e.name for e in self.task.entry_points])
        if self._interpreted():
            source, _ = rewrite_device_literals(source)
            namespace[DEVICE_NAME] = "cpu"
        if self.libdevice == "auto" and not self._interpreted() and gpu_backend():
            align_libdevice(namespace, gpu_backend() or "cuda")
        tree = parse_part(source, where, "test part", line_offset=line)
        plan = plan_test(tree, where, reference_names=defined_names(kernel_source, where))
        body = [node for i, node in enumerate(tree.body) if i not in plan.dropped]
        before = dict(namespace)
        exec(compile(ast.Module(body=body, type_ignores=[]), where, "exec"), namespace)
        if self.published:
            found = module_globals(module)
            if found is not None:
                share_test_names(found, namespace, before)
            self._module_seeding[key] = module_seeding_of(found)
        calls = [
            (c.variable, compile(c.expression, f"{where} (test call)", "eval")) for c in plan.calls
        ]
        self._prepared[key] = (module, namespace, calls)  # the module kept alive: ids stay unique
        return namespace, calls
