"""The ROCm Triton Benchmark suite: 31 real-world kernels, judged under one contract.

Every task is a module in ``geak_suite_rocm.tasks`` that defines ``TASK`` (a
``geak_core.tasks.Task`` without ``harness``/``reference``, filled in here)
and a ``Harness`` class. Its reference kernels live in the module of the same
name under ``geak_suite_rocm/references/``: our own Triton code, used as the
baseline for speedups and as the source of expected outputs; the harness's
``oracle`` (torch / numpy) checks the reference itself in the tests. Module
names are the task ids without the original's ``test_`` prefix (task
``test_add_kernel`` lives in ``tasks/add_kernel.py``), so that no tool takes
them for test files.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from pathlib import Path

from geak_core.errors import InputError
from geak_core.plugins import suggest
from geak_core.tasks import Task

from geak_suite_rocm import tasks as _tasks_pkg

SUITE_NAME = "rocm"
REFERENCES = Path(__file__).parent / "references"


def _load_task(module_name: str) -> Task:
    module = importlib.import_module(f"geak_suite_rocm.tasks.{module_name}")
    task: Task = module.TASK
    return dataclasses.replace(
        task,
        suite=SUITE_NAME,
        harness=f"geak_suite_rocm.tasks.{module_name}:Harness",
        reference=str(REFERENCES / f"{module_name}.py"),
    )


class RocmSuite:
    name = SUITE_NAME
    description = (
        "ROCm Triton Benchmark (GEAK): 31 kernels from AMD's open-source repositories, "
        "re-specified and re-implemented; kernels written for the original are accepted."
    )

    def __init__(self, options: object = None) -> None:
        self._tasks: dict[str, Task] | None = None

    def _all(self) -> dict[str, Task]:
        if self._tasks is None:
            found = sorted(
                m.name for m in pkgutil.iter_modules(_tasks_pkg.__path__) if not m.name.startswith("_")
            )
            self._tasks = {t.id: t for t in (_load_task(name) for name in found)}
        return self._tasks

    def tasks(self) -> list[Task]:
        return list(self._all().values())

    def get(self, task_id: str) -> Task:
        tasks = self._all()
        if task_id not in tasks:
            raise InputError(f"suite 'rocm' has no task {task_id!r} ({suggest(task_id, tasks)})")
        return tasks[task_id]
