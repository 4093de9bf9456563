"""The ROCm Triton Benchmark suite: 31 real-world kernels, judged under one contract.

Every task is a module in ``geak_suite_rocm.tasks`` that defines ``TASK`` (a
``geak_core.api.tasks.Task`` without ``harness``/``reference``, filled in here)
and a ``Harness`` class. Its reference kernels live in the module of the same
name under ``geak_suite_rocm/references/``: our own Triton code, used as the
baseline for speedups and as the source of expected outputs; the harness's
``oracle`` (torch / numpy) checks the reference itself in the tests. A harness that
defines ``eager`` (the task in PyTorch eager at its own dtypes) gives its task
``Task.eager = "harness"``: the judge also reports the speedup against it. Module
names are the task ids without the original's ``test_`` prefix (task
``test_add_kernel`` lives in ``tasks/add_kernel.py``), so that no tool takes
them for test files.

With the option ``baseline`` (a user's GEAK-eval ``ROCm_v1`` folder) speedups
are measured against the published expert kernels instead of our references:
each task's ``timing_baseline`` is the original's kernel part, prepared by
``geak_suite_rocm.originals``; our reference still decides correctness.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.api.components import SuiteBase
from geak_core.api.errors import InputError
from geak_core.api.harness import Harness as BaseHarness
from geak_core.api.tasks import Task, lookup_task

from geak_suite_rocm import tasks as _tasks_pkg
from geak_suite_rocm.originals import OriginalError, prepare_one

log = logging.getLogger(__name__)

SUITE_NAME = "rocm"
REFERENCES = Path(__file__).parent / "references"
BASELINE_ENV = "GEAK_ROCM_BASELINE"  # the baseline folder when no recipe sets it (geak-core eval)


@dataclass
class RocmOptions:
    """``[suite]`` keys of ``name = "rocm"``; a relative path is relative to the recipe."""

    baseline: str = field(
        default_factory=lambda: os.environ.get(BASELINE_ENV, ""),
        metadata={
            "path": True,
            "help": "GEAK-eval's ROCm_v1 folder (geak_eval/data/ROCm/data/ROCm_v1): its expert "
                    "kernels are timed in place of our references, for speedups comparable "
                    f"with published ones (default: ${BASELINE_ENV}; empty: our references)",
        },
    )

    def __post_init__(self) -> None:
        if self.baseline and not Path(os.path.expanduser(self.baseline)).is_dir():
            origin = f" (from ${BASELINE_ENV})" if os.environ.get(BASELINE_ENV) == self.baseline else ""
            raise ValueError(
                f"baseline: {self.baseline}{origin} is not a folder (expected GEAK-eval's "
                "geak_eval/data/ROCm/data/ROCm_v1)"
            )


def _module_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(_tasks_pkg.__path__) if not m.name.startswith("_"))


def _load_task(module_name: str) -> Task:
    module = importlib.import_module(f"geak_suite_rocm.tasks.{module_name}")
    task: Task = module.TASK
    return dataclasses.replace(
        task,
        suite=SUITE_NAME,
        harness=f"geak_suite_rocm.tasks.{module_name}:Harness",
        reference=str(REFERENCES / f"{module_name}.py"),
        eager="harness" if module.Harness.eager is not BaseHarness.eager else "",
    )


class RocmSuite(SuiteBase):
    name = SUITE_NAME
    description = (
        "ROCm Triton Benchmark (GEAK): 31 kernels from AMD's open-source repositories, "
        "re-specified and re-implemented; kernels written for the original are accepted."
    )

    def __init__(self, options: RocmOptions | None = None) -> None:
        self.options = options if options is not None else RocmOptions()
        self._tasks: dict[str, Task] | None = None
        self._baseline_problems: dict[str, str] = {}

    def _all(self) -> dict[str, Task]:
        if self._tasks is None:
            tasks = {}
            for name in _module_names():
                task = _load_task(name)
                if self.options.baseline:
                    task = self._with_baseline(task, name)
                tasks[task.id] = task
            if self.options.baseline:
                self._check_baseline_folder(tasks)
            self._tasks = tasks
        return self._tasks

    def _with_baseline(self, task: Task, module_name: str) -> Task:
        folder = Path(os.path.expanduser(self.options.baseline)).resolve()
        try:
            original = prepare_one(task.id, module_name, folder)
        except OriginalError as exc:
            raise InputError(f"[suite] baseline: {exc}") from None
        if original.problem:
            self._baseline_problems[task.id] = original.problem
        return dataclasses.replace(
            task,
            timing_baseline=str(original.module),
            extra={**task.extra, "timing_baseline": original.describe()},
        )

    def _check_baseline_folder(self, tasks: dict[str, Task]) -> None:
        if len(self._baseline_problems) == len(tasks):
            missing = all(p.endswith(": no such file") for p in self._baseline_problems.values())
            raise InputError(
                f"[suite] baseline: {self.options.baseline} "
                + ("holds none of the task files (gemm.py, test_add_kernel.py, ...)"
                   if missing else "holds no usable task file")
                + "; expected GEAK-eval's geak_eval/data/ROCm/data/ROCm_v1"
            )
        if self._baseline_problems:
            log.warning(
                "rocm baseline: %d task(s) cannot be timed against their original and will "
                "report why: %s", len(self._baseline_problems),
                "; ".join(f"{k}: {v}" for k, v in sorted(self._baseline_problems.items())),
            )

    def tasks(self) -> list[Task]:
        return list(self._all().values())

    def get(self, task_id: str) -> Task:
        return lookup_task(SUITE_NAME, self._all(), task_id)

    def baseline_problems(self) -> dict[str, str]:
        """Tasks whose original cannot be timed (option ``baseline``), by id, with the reason.

        Their ``timing_baseline`` module raises that reason, so judging such a task on a GPU
        ends in a judge error naming it instead of timing our reference."""
        self._all()
        return dict(self._baseline_problems)
