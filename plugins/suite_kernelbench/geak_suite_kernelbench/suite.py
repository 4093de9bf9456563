"""KernelBench (ScalingIntelligence/KernelBench) read from the user's checkout.

Its problems are files ``KernelBench/level<L>/<N>_<Name>.py`` in the format the ``local``
suite reads (``Model``, ``get_inputs``, ``get_init_inputs``; a candidate is ``ModelNew``),
so each becomes a task through the same code: task id ``level<L>_<N>_<Name>``,
``Task.extra["level"]`` and ``["problem_id"]``. ``levels`` picks levels 1, 2, 3 (and 4,
its Hugging Face models, which need the ``transformers`` package). Nothing is downloaded:
``path`` (or ``$GEAK_KERNELBENCH_DATA``) names the checkout, its ``KernelBench/`` folder or
one level's folder.

Judging follows KernelBench's published protocol, with the judge's stricter checks on
top: correctness on five random input draws (seeds 0-4) at KernelBench's tolerances
(atol = rtol = 1e-4 for float32, 1e-2 for float16 and bfloat16), then the judge's secret
seeds, inputs with rare huge outliers (stage 2) and its anti-cheat checks; speed against
PyTorch eager (the reference ``Model`` itself). ``geak-core eval --suite kernelbench`` takes
a folder of ``ModelNew`` files as KernelBench's runs lay them out
(``level_<L>_problem_<N>_sample_<S>_kernel.py``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.errors import InputError
from geak_core.api.tasks import Task
from geak_suite_local.modelfile import ModelFile
from geak_suite_local.suite import ModelFileSuite, load_tasks

SUITE_NAME = "kernelbench"
PATH_ENV = "GEAK_KERNELBENCH_DATA"
LEVELS = (1, 2, 3, 4)
PROBLEM_FILE = re.compile(r"^(\d+)_(\w+)\.py$")
# KernelBench's generated samples: runs/<run>/level_<L>_problem_<N>_sample_<S>_kernel.py
SAMPLE_FILE = re.compile(r"level_(\d+)_problem_(\d+)(?:_sample_\d+)?(?:_kernel)?(?:\.py)?$")


@dataclass
class KernelBenchOptions:
    """``[suite]`` keys of ``name = "kernelbench"``; a relative path is relative to the recipe."""

    path: str = field(
        default_factory=lambda: os.environ.get(PATH_ENV, ""),
        metadata={"path": True,
                  "help": "KernelBench checkout, its KernelBench/ folder or one level folder "
                          f"(default: ${PATH_ENV})"},
    )
    levels: list[int] = field(
        default_factory=lambda: [1, 2, 3],
        metadata={"help": "levels to load, some of 1, 2, 3, 4"},
    )
    forbid_torch_compute: bool = field(
        default=True,
        metadata={"help": "ModelNew.forward may not compute with torch operators (KernelBench's "
                          "own static checker forbids torch compute layers and ops too)"},
    )

    def __post_init__(self) -> None:
        wrong = [v for v in self.levels if v not in LEVELS]
        if wrong or not self.levels:
            raise ValueError(f"levels: expected some of {', '.join(map(str, LEVELS))}, "
                             f"got {self.levels!r}")


def level_folders(path: Path) -> dict[int, Path]:
    """The level folders under ``path`` (a checkout, its KernelBench/ folder or a level)."""
    match = re.fullmatch(r"level(\d+)", path.name)
    if match and path.is_dir():
        return {int(match.group(1)): path}
    for base in (path / "KernelBench", path):
        found = {int(m.group(1)): p for p in base.glob("level*")
                 if p.is_dir() and (m := re.fullmatch(r"level(\d+)", p.name))}
        if found:
            return found
    return {}


def task_id(level: int, stem: str) -> str:
    return f"level{level}_{stem}"


class KernelBenchSuite(ModelFileSuite):
    name = SUITE_NAME
    description = (
        "KernelBench (ScalingIntelligence/KernelBench: 250 PyTorch problems in levels 1-3, "
        "level 4 besides) read from your own checkout; candidates write ModelNew with Triton "
        "kernels, judged on KernelBench's protocol and the judge's stricter checks"
    )

    def __init__(self, options: KernelBenchOptions | None = None) -> None:
        super().__init__()
        self.options = options if options is not None else KernelBenchOptions()
        if not self.options.path:
            raise InputError(f"[suite] path: name your KernelBench checkout (or set {PATH_ENV}); "
                             "geak-core never downloads it")
        root = Path(self.options.path).expanduser()
        self.folders = level_folders(root)
        if not self.folders:
            raise InputError(f"[suite] path: {root} holds no KernelBench/level<N> folders")
        missing = [lv for lv in self.options.levels if lv not in self.folders]
        if missing and len(self.folders) > 1:
            raise InputError(f"[suite] levels: {root} has no level {missing[0]} "
                             f"(it has {', '.join(map(str, sorted(self.folders)))})")
        self._by_problem: dict[tuple[int, int], str] = {}

    def _read(self) -> dict[str, Task]:
        tasks: dict[str, Task] = {}
        for level in sorted(self.options.levels):
            folder = self.folders.get(level)
            if folder is None:
                continue
            files = sorted((p for p in folder.glob("*.py") if PROBLEM_FILE.match(p.name)),
                           key=lambda p: int(PROBLEM_FILE.match(p.name).group(1)))  # type: ignore[union-attr]
            tasks.update(load_tasks(files, SUITE_NAME, self._unusable,
                                    self._identify(level),
                                    forbid_torch_compute=self.options.forbid_torch_compute))
        for task in tasks.values():
            self._by_problem[(task.extra["level"], task.extra["problem_id"])] = task.id
        return tasks

    @staticmethod
    def _identify(level: int) -> Any:
        def identify(mf: ModelFile) -> tuple[str, str, dict[str, Any], int | None]:
            number = int(PROBLEM_FILE.match(mf.path.name).group(1))  # type: ignore[union-attr]
            label = f"KernelBench level {level} problem {number} (`{mf.path.name}`)"
            return task_id(level, mf.stem), label, {"level": level, "problem_id": number}, None
        return identify

    def resolve_record(self, record: dict[str, Any]) -> str | None:
        """The task of a KernelBench sample: a file (or ``task``) named
        ``level_<L>_problem_<N>_sample_<S>_kernel.py``, or ``level`` and ``problem_id``."""
        tasks = self._load()
        for key in ("task_id", "task", "file"):
            value = record.get(key)
            if not isinstance(value, str):
                continue
            name = Path(value.strip()).name
            if name.removesuffix(".py") in tasks:
                return name.removesuffix(".py")
            match = SAMPLE_FILE.search(name)
            if match:
                return self._by_problem.get((int(match.group(1)), int(match.group(2))))
        level, problem = record.get("level"), record.get("problem_id")
        if isinstance(level, int) and isinstance(problem, int):
            return self._by_problem.get((level, problem))
        return None
