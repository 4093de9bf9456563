"""KernelBench-X as a geak-core suite.

Tasks are the ``data/kernelbenchx/<Category>/<task>.py`` files of the user's
checkout (184 in the release, in 15 category folders). Each file is a PyTorch
reference function, a line of 146 ``#``, then a test part whose
``test_results = test_...()`` line runs the test. A candidate implements the
function the test calls (same name and parameters) with Triton kernels; the
reference, and the speed baseline, is the PyTorch function itself.

Judging reuses the TritonBench suite's machinery (one task file format):
``geak_suite_kernelbenchx.harness`` runs the task's own test on the module
under judgement, splitting its results into the two correctness stages (the
test's ``standard`` inputs, then its ``outlier`` inputs), and times the
inputs of the task's performance script. See docs/kernelbenchx.md.
"""

from __future__ import annotations

import ast
import logging
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.astutil import parse_source
from geak_core.api.components import SuiteBase
from geak_core.api.errors import InputError
from geak_core.api.tasks import CATEGORIES, OutlierSpec, Requirement, Task, lookup_task
from geak_suite_tritonbench.records import code_from_reply, reply_of
from geak_suite_tritonbench.references import reference_folder, write_reference
from geak_suite_tritonbench.taskfile import TaskFile, TaskFileError, read_task_file
from geak_suite_tritonbench.unusable import warn_unusable

from geak_suite_kernelbenchx import precision
from geak_suite_kernelbenchx.layout import Layout, load_metadata, locate
from geak_suite_kernelbenchx.published import load_rows, machine_for

log = logging.getLogger(__name__)

SUITE_NAME = "kernelbenchx"
HARNESS = "geak_suite_kernelbenchx.harness:Harness"
QUANTIZATION_HARNESS = "geak_suite_kernelbenchx.harness:QuantizationHarness"
PATH_ENV = "GEAK_KERNELBENCHX_DATA"
PROTOCOL_SEED = 0  # the benchmark seeds random and torch with KERNELBENCHX_SEED, default 0
QUANTIZATION = "Quantization"
OUTLIER_MODE = "outlier"  # the test parts' name of the outlier input mode
STAGE_INPUT = "outlier_stage"  # see harness: tells the harness which stage runs
VARIANT_SUFFIXES = ("fp16", "bf16", "int8")
VARIANTS = ("base", *VARIANT_SUFFIXES)
PRECISION_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "int8": "int8"}

# (atol, rtol) per output dtype: the benchmark's (torch.testing.assert_close with rtol = atol
# = 1e-5 for float32/float64, 5e-3 for float16/bfloat16, exact otherwise; numpy and Python
# floats 1e-5).
KERNELBENCHX_TOLERANCES: dict[str, list[float]] = {
    "float64": [1e-5, 1e-5],
    "float32": [1e-5, 1e-5],
    "float16": [5e-3, 5e-3],
    "bfloat16": [5e-3, 5e-3],
    "python_float": [1e-5, 1e-5],
}


@dataclass
class KernelBenchXOptions:
    """``[suite]`` keys of ``name = "kernelbenchx"``; relative paths are relative to the recipe."""

    path: str = field(
        default_factory=lambda: os.environ.get(PATH_ENV, ""),
        metadata={"path": True,
                  "help": "KernelBench-X checkout, its data/ folder or data/kernelbenchx/ "
                          f"(default: ${PATH_ENV})"},
    )
    variants: list[str] = field(
        default_factory=lambda: list(VARIANTS),
        metadata={"help": "which precision variants load: base (the task as named), fp16, "
                          "bf16, int8 (files <task>_fp16.py, ...)"},
    )
    tolerances: dict[str, list[float]] = field(
        default_factory=lambda: {k: list(v) for k, v in KERNELBENCHX_TOLERANCES.items()},
        metadata={"help": "(atol, rtol) per output dtype name, 'python_float' or '*'"},
    )
    # True: entry points may not compute with torch (the task is to replace the PyTorch code).
    forbid_torch_compute: bool = True
    quantization_check: bool = field(
        default=True,
        metadata={"help": "quantization tasks: reject candidates that use torch's quantization "
                          "APIs or derive scales outside a Triton kernel"},
    )
    precision_thresholds: dict[str, float] = field(
        default_factory=dict,
        metadata={"help": "quantization tasks without thresholds of their own: cosine_sim, "
                          "l1_relative, rmse (default 0.99, 0.01, 0.01)"},
    )

    def __post_init__(self) -> None:
        wrong = [v for v in self.variants if v not in VARIANTS]
        if wrong:
            raise ValueError(f"variants: unknown {', '.join(map(repr, wrong))}; "
                             f"expected some of {', '.join(VARIANTS)}")
        for dtype, pair in self.tolerances.items():
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                    and all(isinstance(v, (int, float)) and v >= 0 for v in pair)):
                raise ValueError(
                    f"tolerances.{dtype}: expected [atol, rtol] (two numbers >= 0), got {pair!r}"
                )
        for key, value in self.precision_thresholds.items():
            if key not in precision.METRICS or not isinstance(value, (int, float)):
                raise ValueError(f"precision_thresholds.{key}: expected one of "
                                 f"{', '.join(precision.METRICS)} with a number")


def has_outlier_mode(test_source: str) -> bool:
    """Whether a test part draws inputs in the benchmark's outlier mode (the string
    ``"outlier"`` as a constant: ``for mode in ("standard", "outlier")`` or ``mode="outlier"``)."""
    try:
        tree = parse_source(test_source)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Constant) and n.value == OUTLIER_MODE for n in ast.walk(tree))


def precision_of(stem: str, stems: set[str]) -> tuple[str | None, str | None]:
    """(suffix, base task) of a precision variant ``<base>_fp16`` etc. whose base exists."""
    base, _, suffix = stem.rpartition("_")
    if suffix in VARIANT_SUFFIXES and base in stems:
        return suffix, base
    return None, None


def _docstring(task_file: TaskFile, name: str) -> str:
    try:
        tree = parse_source(task_file.kernel_source)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return ast.get_docstring(node) or ""
    return ""


def _instruction(task_file: TaskFile, category: str, info: dict[str, Any] | None,
                 suffix: str | None, thresholds: dict[str, float] | None) -> str:
    entry = task_file.entry_points[0]
    lines = [
        f"Implement the function `{entry.signature()}` of KernelBench-X task '{task_file.stem}' "
        f"({category}) in Python, with Triton kernels doing the computation. The task's test "
        f"calls it and compares what it returns with the PyTorch reference's results (same "
        f"shapes and dtypes).",
    ]
    if info:
        for key, title in (("description", "Functional description"),
                           ("func_inputs", "Wrapper entry"), ("math", "Math"),
                           ("other", "Notes")):
            value = info.get(key)
            if isinstance(value, str) and value.strip():
                lines.append(f"{title}: {value.strip()}")
    else:
        doc = _docstring(task_file, entry.name)
        if doc:
            lines.append(f"Description: {doc}")
    if suffix:
        lines.append(f"Precision: inputs and outputs are {PRECISION_DTYPES[suffix]}.")
    if thresholds is not None:
        spec = (info or {}).get("quantization_spec") or {}
        if spec:
            lines.append("Quantization: " + ", ".join(f"{k} {v}" for k, v in spec.items()) + ".")
        lines.append(
            "Compute the quantization scales from the data inside your Triton kernel(s) "
            "(no torch quantization APIs, no scales derived with torch), quantize, compute and "
            "dequantize. The result is judged against the float PyTorch result by cosine "
            f"similarity >= {thresholds['cosine_sim']:g}, relative L1 <= "
            f"{thresholds['l1_relative']:g} and RMSE <= {thresholds['rmse']:g}, not by equality."
        )
    return "\n".join(lines)


class KernelBenchXSuite(SuiteBase):
    name = SUITE_NAME
    description = (
        "KernelBench-X (184 PyTorch operators in 15 categories, multi-precision variants, "
        "quantization tasks) read from your own checkout; candidates implement the PyTorch "
        "function with Triton kernels and are judged by the task's own test in two stages."
    )

    def __init__(self, options: KernelBenchXOptions | None = None) -> None:
        self.options = options if options is not None else KernelBenchXOptions()
        self.layout: Layout = locate(self.options.path)
        self._metadata = load_metadata(self.layout.json_path) if self.layout.json_path else {}
        self._tasks: dict[str, Task] | None = None
        self._unusable: dict[str, str] = {}

    # -- loading -------------------------------------------------------------

    def _load(self) -> dict[str, Task]:
        if self._tasks is not None:
            return self._tasks
        files = self.layout.task_files()
        if not files:
            raise InputError(f"[suite] path: {self.layout.tasks_dir} holds no task .py files")
        stems = {p.stem for p in files}
        tasks: dict[str, Task] = {}
        variants: dict[str, list[str]] = {}
        for path in files:
            category = path.parent.name
            suffix, base = precision_of(path.stem, stems)
            if (suffix or "base") not in self.options.variants:
                continue
            if path.stem in tasks:
                self._unusable[f"{category}/{path.name}"] = (
                    f"{path}: a second task named {path.stem} (task ids are file names)")
                continue
            try:
                task_file = read_task_file(path)
            except TaskFileError as exc:
                self._unusable[path.stem] = str(exc)
                continue
            if category not in CATEGORIES:
                log.warning("kernelbenchx: %s is in folder %s, not one of the benchmark's "
                            "categories", path, category)
            references = reference_folder(SUITE_NAME, self.layout.tasks_dir) / category
            tasks[path.stem] = self._task(task_file, category, suffix, base,
                                          write_reference(references, task_file))
            if base:
                variants.setdefault(base, []).append(path.stem)
        for base, names in variants.items():
            if base in tasks:
                tasks[base].extra["variants"] = sorted(names)
        warn_unusable(log, SUITE_NAME, str(self.layout.tasks_dir), self._unusable,
                      f"geak-core tasks {SUITE_NAME} --option path={shlex.quote(str(self.options.path))}")
        self._tasks = tasks
        return tasks

    def _task(self, task_file: TaskFile, category: str, suffix: str | None, base: str | None,
              reference: Path) -> Task:
        info = self._metadata.get(task_file.path.name)
        quantized = category == QUANTIZATION
        thresholds = None
        if quantized:
            own = (info or {}).get("precision_thresholds") or {}
            thresholds = {**precision.DEFAULT_THRESHOLDS, **self.options.precision_thresholds,
                          **{k: float(v) for k, v in own.items() if k in precision.METRICS}}
        perf = self.layout.perf_script(task_file.stem)
        outliers = has_outlier_mode(task_file.test_source)
        published = load_rows(self.layout.golden_dir, task_file.stem) if self.layout.golden_dir \
            else {}
        plan = task_file.plan
        difficulty = (info or {}).get("difficulty")
        return Task(
            suite=SUITE_NAME,
            id=task_file.stem,
            instruction=_instruction(task_file, category, info, suffix, thresholds),
            entry_points=task_file.entry_points,
            harness=QUANTIZATION_HARNESS if quantized else HARNESS,
            reference=str(reference),
            difficulty=difficulty if difficulty in (1, 2, 3, 4, 5) else None,
            category=category,
            tolerances={k: [float(x) for x in v]
                        for k, v in {**KERNELBENCHX_TOLERANCES, **self.options.tolerances}.items()},
            # stage 2 is the test's own outlier-mode inputs; the judge's outlier scaling only
            # marks the stage on the one-element input STAGE_INPUT (see harness)
            outliers=OutlierSpec(inputs=(STAGE_INPUT,)) if outliers else None,
            outlier_note="" if outliers else "the task's test draws no outlier-mode inputs",
            seeds=(PROTOCOL_SEED,),
            requires=[Requirement("gpu", f"under the CPU interpreter: {reason}")
                      for reason in task_file.interpreter_blockers],
            forbid_torch_compute=self.options.forbid_torch_compute,
            eager="reference",  # the reference is the PyTorch function: speedups are against eager
            shapes_note=(
                "the task's test builds small fixed inputs and random ones (standard, then "
                "outlier mode)"
                + (f"; speed is measured on the inputs of {perf.name}" if perf else "")
            ),
            extra={
                "protocol": "published",
                "protocol_seed": PROTOCOL_SEED,
                "file": str(task_file.path),
                "folder": category,
                "separator_line": task_file.separator_line,
                "test_function": plan.test_function,
                "result_variable": plan.result_variable,
                "test_calls": [[c.variable, c.expression] for c in plan.calls],
                "perf_script": str(perf) if perf else None,
                "libdevice": "auto",
                "quirks": [q for q in plan.quirks if q != "result stored in test_results"],
                "precision": suffix,
                "variant_of": base,
                "variants": [],
                "dtype": (info or {}).get("dtype"),
                "outlier_mode": outliers,
                "quantization": (
                    {"spec": (info or {}).get("quantization_spec"), "thresholds": thresholds,
                     "check": self.options.quantization_check}
                    if quantized else None
                ),
                "metadata": info is not None,
                "published_ms": published,
            },
        )

    # -- Suite protocol ------------------------------------------------------

    def tasks(self) -> list[Task]:
        return list(self._load().values())

    def get(self, task_id: str) -> Task:
        return lookup_task(SUITE_NAME, self._load(), task_id, self._unusable)

    # -- KernelBench-X specifics -----------------------------------------------

    def unusable(self) -> dict[str, str]:
        """Task files that could not be loaded, by id, with the reason."""
        self._load()
        return dict(self._unusable)

    def categories(self) -> dict[str, list[str]]:
        """Task ids per category folder, in folder order."""
        found: dict[str, list[str]] = {}
        for task in self._load().values():
            found.setdefault(task.category or "?", []).append(task.id)
        return found

    def published_for(self, task_id: str, device_name: str) -> tuple[str | None, list[dict]]:
        """(machine, rows) of the benchmark's published PyTorch timings for the device named
        ``device_name``; (None, []) when the benchmark measured no such GPU."""
        rows = self.get(task_id).extra.get("published_ms") or {}
        machine = machine_for(device_name, sorted(rows))
        return machine, (rows.get(machine, []) if machine else [])

    def resolve_record(self, record: dict[str, Any]) -> str | None:
        """The task of a record: ``task_id``, ``task`` or ``file`` (``Fusion/attention.py``,
        ``attention.py`` or ``attention``), as the benchmark's JSONL input names it."""
        tasks = self._load()
        for key in ("task_id", "task", "file"):
            value = record.get(key)
            if isinstance(value, str) and value.strip():
                stem = Path(value.strip()).name.removesuffix(".py")
                if stem in tasks or stem in self._unusable:
                    return stem
        return None

    def record_code(self, record: dict[str, Any], task_id: str | None = None) -> str | None:
        """The candidate code of a record's ``predict`` reply (anything after a separator
        line dropped), or None when it has none."""
        reply = reply_of(record)
        if reply is None:
            return None
        task_id = task_id or self.resolve_record(record)
        tasks = self._load()
        names = [e.name for e in tasks[task_id].entry_points] if task_id in tasks else []
        return code_from_reply(reply, names, drop_test_calls=True)
