"""TritonBench-G (and GEAK's TritonBench-revised) as a geak-core suite.

Tasks are the ``.py`` files of the data folder (184 in the release); the
instruction JSON, when present, adds instructions and difficulty by file
name. A file that cannot be used (no separator, a syntax error, no test
function, nothing the test calls) is listed by ``unusable()`` with its reason
and the other tasks still load.

The judge imports ``Task.reference`` as the reference module, and importing a
whole task file would run its test at module level (on ``'cuda'``). So the
reference is the file's kernel part, written once to a cache folder
(``$GEAK_CACHE_DIR`` or ``~/.cache/geak-core``) with the same line numbers as
the original; ``Task.extra["file"]`` is the original file.

Two protocols (option ``protocol``): ``published`` judges as TritonBench and
GEAK-eval do (the candidate and the test in one module namespace, the test's
result alone decides correctness, the protocol's seed, performance-script
inputs for timing only); ``strict`` keeps the candidate's namespace apart from
the test's, compares the performance-script outputs too and seeds with the
judge's own seeds. ``Task.extra["protocol"]`` tells the harness which.
"""

from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.components import SuiteBase
from geak_core.api.errors import InputError
from geak_core.api.tasks import Requirement, Task, lookup_task

from geak_suite_tritonbench.layout import (
    DataLayout,
    Instructions,
    load_instructions,
    locate,
)
from geak_suite_tritonbench.matching import DEFAULT_THRESHOLD, LabelMatcher, normalise
from geak_suite_tritonbench.records import code_from_reply, reply_of
from geak_suite_tritonbench.references import reference_folder, write_reference
from geak_suite_tritonbench.seeding import PROTOCOL_SEED
from geak_suite_tritonbench.taskfile import TaskFile, TaskFileError, read_task_file
from geak_suite_tritonbench.unusable import warn_unusable

log = logging.getLogger(__name__)

SUITE_NAME = "tritonbench"
HARNESS = "geak_suite_tritonbench.harness:Harness"
PATH_ENV = "GEAK_TRITONBENCH_DATA"  # the data folder when no path is given (command line use)
PROTOCOLS = ("published", "strict")
STRICT_SEEDS = (0, 1)

# (atol, rtol) per output dtype. Looser than the core defaults: a candidate may tile and
# accumulate in another order than the reference, and tl.dot on float32 inputs uses TF32
# on NVIDIA GPUs by default (10-bit mantissa), so float32 results agree to about 1e-3.
TRITONBENCH_TOLERANCES: dict[str, list[float]] = {
    "float32": [1e-3, 1e-3],
    "float16": [1e-2, 1e-2],
    "bfloat16": [2e-2, 2e-2],
    "python_float": [1e-3, 1e-3],
}


@dataclass
class TritonBenchOptions:
    """``[suite]`` keys of ``name = "tritonbench"``; relative paths are relative to the recipe."""

    path: str = field(
        default_factory=lambda: os.environ.get(PATH_ENV, ""),
        metadata={"path": True,
                  "help": "TritonBench data/ folder, or its TritonBench_G_v1/ folder of task "
                          f"files (default: ${PATH_ENV})"},
    )
    instruction: str = field(default="complete", metadata={"choices": ["simple", "complete"]})
    protocol: str = field(
        default="published",
        metadata={
            "choices": list(PROTOCOLS),
            "help": "published: as TritonBench / GEAK-eval judge (candidate and test in one "
                    "namespace, the test's result alone decides, seed 42, performance inputs "
                    "only timed); strict: separate namespaces, performance outputs compared "
                    "too, the judge's own seeds",
        },
    )
    json: str = field(
        default="",
        metadata={"path": True,
                  "help": "instruction JSON (default: TritonBench_G_v1.json beside the tasks)"},
    )
    hip_to_cuda_libdevice: str = field(
        default="auto",
        metadata={
            "choices": ["auto", "off"],
            "help": "auto: tl.extra.hip/cuda.libdevice resolve to the GPU's own backend",
        },
    )
    perf_scripts: str = field(
        default="",
        metadata={"path": True,
                  "help": "folder of <name>_perf.py scripts (default: golden_metrics/ found "
                          "beside the data)"},
    )
    # False: like the published protocol, wrappers may compute with torch (the references do);
    # the judge still requires a Triton kernel of the candidate's own in every run.
    forbid_torch_compute: bool = False
    tolerances: dict[str, list[float]] = field(
        default_factory=lambda: {k: list(v) for k, v in TRITONBENCH_TOLERANCES.items()},
        metadata={"help": "(atol, rtol) per output dtype name, 'python_float' or '*'"},
    )
    label_threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol: expected one of {', '.join(PROTOCOLS)}, "
                             f"got {self.protocol!r}")
        for dtype, pair in self.tolerances.items():
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2
                    and all(isinstance(v, (int, float)) and v >= 0 for v in pair)):
                raise ValueError(
                    f"tolerances.{dtype}: expected [atol, rtol] (two numbers >= 0), got {pair!r}"
                )


def _text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _generated_instruction(task_file: TaskFile) -> str:
    names = ", ".join(f"`{e.signature()}`" for e in task_file.entry_points)
    return (
        f"Write the Triton kernel(s) and Python wrapper(s) of the TritonBench task "
        f"'{task_file.stem}'. The task's test calls {names}; keep these names and signatures."
    )


class TritonBenchSuite(SuiteBase):
    name = SUITE_NAME
    description = (
        "TritonBench-G / TritonBench-revised (184 real-world Triton tasks) read from your own "
        "copy of the data; each task is judged by running its own test on the candidate."
    )

    def __init__(self, options: TritonBenchOptions | None = None) -> None:
        self.options = options if options is not None else TritonBenchOptions()
        self.layout: DataLayout = locate(
            self.options.path, self.options.json, self.options.perf_scripts
        )
        self._instructions: dict[str, Instructions] = (
            load_instructions(self.layout.json_path) if self.layout.json_path else {}
        )
        self._tasks: dict[str, Task] | None = None
        self._unusable: dict[str, str] = {}
        self._matcher = LabelMatcher(self.options.label_threshold)
        self._instruction_texts: list[tuple[str, str]] = []

    # -- loading -------------------------------------------------------------

    def _load(self) -> dict[str, Task]:
        if self._tasks is not None:
            return self._tasks
        tasks: dict[str, Task] = {}
        references = reference_folder(SUITE_NAME, self.layout.tasks_dir)
        files = self.layout.task_files()
        if not files:
            raise InputError(f"[suite] path: {self.layout.tasks_dir} holds no task .py files")
        for path in files:
            info = self._instructions.get(path.name)
            instructions = (info.simple, info.complete) if info else ()
            try:
                task_file = read_task_file(path)
            except TaskFileError as exc:
                self._unusable[path.stem] = str(exc)
                # known to the matcher all the same: its records must find it, not a neighbour
                self._matcher.add(path.stem, info.output if info else "", _text_of(path),
                                  instructions=instructions)
                continue
            task = self._task(task_file, info, write_reference(references, task_file))
            tasks[task.id] = task
            self._matcher.add(task.id, task_file.kernel_source, task_file.text,
                              info.output if info else "", instructions=instructions)
            for text in instructions:
                if text.strip():
                    self._instruction_texts.append((normalise(text), task.id))
        present = {path.name for path in files}
        for name, info in self._instructions.items():
            if name not in present:
                stem = name.removesuffix(".py")
                self._unusable[stem] = (f"{self.layout.json_path}: lists {name}, which the task "
                                        f"folder {self.layout.tasks_dir} does not have")
                self._matcher.add(stem, info.output, instructions=(info.simple, info.complete))
        warn_unusable(log, SUITE_NAME, str(self.layout.tasks_dir), self._unusable,
                      f"geak-core tasks {SUITE_NAME} --option path={shlex.quote(str(self.options.path))}")
        self._tasks = tasks
        return tasks

    def _task(self, task_file: TaskFile, info: Instructions | None, reference: Path) -> Task:
        instruction = ""
        if info is not None:
            instruction = info.simple if self.options.instruction == "simple" else info.complete
        perf = self.layout.perf_script(task_file.stem)
        plan = task_file.plan
        published = self.options.protocol == "published"
        return Task(
            suite=SUITE_NAME,
            id=task_file.stem,
            instruction=instruction or _generated_instruction(task_file),
            entry_points=task_file.entry_points,
            harness=HARNESS,
            reference=str(reference),
            difficulty=info.difficulty if info else None,
            category=None,
            tolerances={
                k: [float(x) for x in v]
                for k, v in {**TRITONBENCH_TOLERANCES, **self.options.tolerances}.items()
            },
            outliers=None,
            outlier_note="the task's own test builds its inputs; there is no outlier stage",
            seeds=(PROTOCOL_SEED,) if published else STRICT_SEEDS,
            requires=[
                Requirement("gpu", f"under the CPU interpreter: {reason}")
                for reason in task_file.interpreter_blockers
            ],
            forbid_torch_compute=self.options.forbid_torch_compute,
            shapes_note=(
                "the task's test builds small fixed-shape inputs"
                + (f"; speed is measured on the inputs of {perf.name}" if perf else "")
            ),
            extra={
                "protocol": self.options.protocol,
                # the seed the published protocol judges with; None: no protocol seed (strict)
                "protocol_seed": PROTOCOL_SEED if published else None,
                "file": str(task_file.path),
                "separator_line": task_file.separator_line,
                "test_function": plan.test_function,
                "result_variable": plan.result_variable,
                "test_calls": [[c.variable, c.expression] for c in plan.calls],
                "perf_script": str(perf) if perf else None,
                "libdevice": self.options.hip_to_cuda_libdevice,
                "instruction_source": "json" if instruction else "generated",
                "repo": info.repo if info else "",
                "quirks": list(plan.quirks),
            },
        )

    # -- Suite protocol ------------------------------------------------------

    def tasks(self) -> list[Task]:
        return list(self._load().values())

    def get(self, task_id: str) -> Task:
        return lookup_task(SUITE_NAME, self._load(), task_id, self._unusable)

    # -- TritonBench specifics -------------------------------------------------

    def unusable(self) -> dict[str, str]:
        """Tasks that cannot be judged, by id, with the reason: task files that could not be
        loaded, and names the instruction JSON lists without a file in the task folder."""
        self._load()
        return dict(self._unusable)

    def match_label(self, label: str, hint: str = "") -> str | None:
        """The task whose reference code ``label`` is (see ``matching``), or None. The id may
        be one of ``unusable()``: a label is never matched to another task than its own."""
        self._load()
        return self._matcher.match(label, hint)

    def resolve_record(self, record: dict[str, Any]) -> str | None:
        """The task a record of another system's outputs is for, or None.

        Looks at ``task_id``, then ``file`` (a file name, with or without
        ``.py``), then ``label`` (the reference code; the record's
        ``instruction`` / ``prompt`` breaks ties), then ``instruction`` /
        ``prompt`` (containing a task's instruction text). The id returned may
        be one of ``unusable()``; the caller reports such a record unjudged.
        """
        tasks = self._load()
        for key in ("task_id", "file"):
            value = record.get(key)
            if isinstance(value, str) and value.strip():
                stem = Path(value.strip()).name.removesuffix(".py")
                if stem in tasks or stem in self._unusable:
                    return stem
        label = record.get("label")
        if isinstance(label, str) and label.strip():
            hint = " ".join(v for v in (record.get("instruction"), record.get("prompt"))
                            if isinstance(v, str))
            found = self._matcher.match(label, hint)
            if found:
                return found
        for key in ("instruction", "prompt"):
            value = record.get(key)
            if isinstance(value, str) and value.strip():
                text = normalise(value)
                hits = [(len(t), tid) for t, tid in self._instruction_texts if t and t in text]
                if hits:
                    return max(hits)[1]
        return None

    def record_code(self, record: dict[str, Any], task_id: str | None = None) -> str | None:
        """The candidate code of a record (its ``predict`` reply), or None when it has none.

        Under the published protocol, module-level calls of ``test_*`` functions are
        removed, as GEAK-eval removes them (the original TritonBench kept only imports
        and function definitions): the judge runs the task's own test.
        """
        reply = reply_of(record)
        if reply is None:
            return None
        task_id = task_id or self.resolve_record(record)
        tasks = self._load()
        names = [e.name for e in tasks[task_id].entry_points] if task_id in tasks else []
        # both published judges drop the model's own module-level calls of its test functions
        return code_from_reply(reply, names,
                               drop_test_calls=self.options.protocol == "published")
