"""The ``local`` suite: your own operators, as files in KernelBench's format.

``[suite] name = "local"``, ``path = "<folder or file>"``: each ``.py`` file of the folder
(not its subfolders; files starting with ``_`` or ``test_`` are left out) is a task whose
id is the file's stem (see :mod:`geak_suite_local.modelfile` for the format and the
optional settings). A candidate is a module defining ``ModelNew``, a ``torch.nn.Module``
with ``Model``'s constructor whose ``forward`` computes the same with Triton kernels.

A file that holds a ``ModelNew`` of its own (your Triton implementation) shows it to the
model as the starting point, and it is the timing baseline: speedups are against it, and
against PyTorch eager (``Model``) beside it. Otherwise ``Model`` is both the reference
and the baseline.

Files are read without running them, then run once on torch's meta device in one child
process (:mod:`geak_suite_local.probe`): a file that cannot be a task (no ``Model``, a
syntax error, ``get_inputs`` failing, outputs that are not tensors) is listed by
``unusable()`` with the file and the problem and never stops the other tasks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.components import SuiteBase
from geak_core.api.errors import InputError
from geak_core.api.tasks import EntryPoint, OutlierSpec, Task, lookup_task
from geak_core.engine.store import CACHE_ENV, atomic_write, cache_dir
from geak_core.kit.sandbox import scrub_env

from geak_suite_local.loading import case_name
from geak_suite_local.modelfile import (
    CANDIDATE_CLASS,
    REFERENCE_CLASS,
    ModelFile,
    ModelFileError,
    read_model_file,
)

log = logging.getLogger(__name__)

SUITE_NAME = "local"
HARNESS = "geak_suite_local.harness:ModelHarness"
FORMAT = "kernelbench"
# KernelBench judges correctness on 5 input draws (num_correct_trials); the judge adds
# secret seeds of its own.
SEEDS = (0, 1, 2, 3, 4)
PROBE_TIMEOUT_S = 300
REFERENCE_SUFFIX = (
    f"\n\n# appended by geak-core: the reference is this file's {REFERENCE_CLASS}\n"
    f"{CANDIDATE_CLASS} = {REFERENCE_CLASS}\n"
)


@dataclass
class LocalOptions:
    """``[suite]`` keys of ``name = "local"``; a relative path is relative to the recipe."""

    path: str = field(
        default="",
        metadata={"path": True,
                  "help": "a task file in KernelBench's format, or a folder of them"},
    )
    forbid_torch_compute: bool = field(
        default=True,
        metadata={"help": "ModelNew.forward may not compute with torch operators (only "
                          "allocate, view and copy): the work must be the Triton kernels'"},
    )


def task_files(path: Path) -> list[Path]:
    """The task files of a folder (sorted), or the file itself."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir()
                  if p.suffix == ".py" and p.is_file() and not p.name.startswith(("_", "test_")))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _probe_code() -> str:
    """The probe's own code, part of each cached result's key (a new probe checks anew)."""
    here = Path(__file__).parent
    return "".join((here / name).read_text(encoding="utf-8")
                   for name in ("probe.py", "loading.py"))


def probe(files: list[ModelFile]) -> dict[str, dict[str, Any]]:
    """Each file run on the meta device (:mod:`geak_suite_local.probe`), by path; results are
    cached by the file's and its settings' content."""
    folder = cache_dir("local-probe")
    code = _probe_code()
    results: dict[str, dict[str, Any]] = {}
    todo = []
    for mf in files:
        sidecar = mf.sidecar.read_text(encoding="utf-8") if mf.sidecar else ""
        key = folder / f"{_digest(str(mf.path), mf.source, sidecar, code)}.json"
        if key.is_file():
            try:
                results[str(mf.path)] = json.loads(key.read_text(encoding="utf-8"))
                continue
            except (OSError, ValueError):
                pass
        todo.append((mf, key))
    if not todo:
        return results
    entries = [{"file": str(mf.path), "module": f"geak_probe_{_digest(str(mf.path))}",
                "sets": [[s.name, s.overrides] for s in mf.shapes],
                "small_sets": [[s.name, s.overrides] for s in mf.small_shapes],
                "dtypes": mf.dtypes} for mf, _ in todo]
    env = scrub_env(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        done = subprocess.run([sys.executable, "-m", "geak_suite_local.probe"],
                              input=json.dumps(entries), capture_output=True, text=True,
                              env=env, timeout=PROBE_TIMEOUT_S, cwd=str(todo[0][0].path.parent))
    except subprocess.TimeoutExpired:
        for mf, _ in todo:
            results[str(mf.path)] = {"error": f"{mf.path}: not checked: running the task files "
                                              f"on the meta device took over {PROBE_TIMEOUT_S} s"}
        return results
    try:
        found = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        why = f"the check of the task files ended (exit {done.returncode}): {' | '.join(tail)}"
        return {**results, **{str(mf.path): {"error": f"{mf.path}: {why}"} for mf, _ in todo}}
    for mf, key in todo:
        result = found.get(str(mf.path)) or {"error": f"{mf.path}: not checked"}
        results[str(mf.path)] = result
        try:
            atomic_write(key, json.dumps(result), fsync=False)
        except OSError as exc:
            log.warning("cannot cache the check of %s in %s (%s); set %s", mf.path, key.parent,
                        exc, CACHE_ENV)
    return results


def write_reference(mf: ModelFile, suite: str) -> Path:
    """The reference module: the task file with ``ModelNew = Model`` appended (same line
    numbers), in the suite's cache folder; rewritten only when its content changed."""
    target = cache_dir(suite) / _digest(str(mf.path.parent)) / mf.path.name
    content = mf.source + REFERENCE_SUFFIX
    try:
        if not target.is_file() or target.read_text(encoding="utf-8") != content:
            atomic_write(target, content)
    except OSError as exc:
        raise InputError(f"cannot write the reference of {mf.path.name} to {target.parent} "
                         f"({exc}); set {CACHE_ENV} to a writable folder") from None
    return target


def _case_specs(mf: ModelFile, probed: dict[str, Any], small: bool) -> list[dict[str, Any]]:
    specs = []
    for input_set in (mf.small_shapes if small else mf.shapes):
        for dtype in mf.dtypes:
            name = case_name(input_set.name, dtype, mf.dtypes)
            seen = probed.get(f"{'small' if small else 'full'}:{name}") or {}
            spec = {"name": name, "overrides": input_set.overrides, "dtype": dtype,
                    "bytes": seen.get("bytes")}
            if seen.get("note"):
                spec["note"] = seen["note"]
            specs.append(spec)
    return specs


def _shapes_note(mf: ModelFile, probed: dict[str, Any]) -> str:
    lines = []
    for input_set in mf.shapes:
        values = ", ".join(f"{k} = {v!r}" for k, v in input_set.overrides.items())
        outputs = (probed.get(f"full:{case_name(input_set.name, mf.dtypes[0], mf.dtypes)}")
                   or {}).get("outputs")
        shown = f"; outputs {', '.join(f'{s} {d}' for s, d in outputs)}" if outputs else ""
        lines.append(f"- {input_set.name}: {values or 'the sizes written in the file'}{shown}")
    lines.append(f"dtypes: {', '.join(mf.dtypes)} (inputs and the model's parameters)")
    return "\n".join(lines)


def instruction(mf: ModelFile, label: str) -> str:
    """What the model is asked: the reference file whole, and the user's kernel if any."""
    params = ", ".join(mf.forward_params)
    lines = [
        f"Write `class {CANDIDATE_CLASS}(torch.nn.Module)` for {label}: the same constructor "
        f"arguments as `{REFERENCE_CLASS}` (from `get_init_inputs()`), and a `forward(self, "
        f"{params})` that returns what `{REFERENCE_CLASS}.forward` returns (same shapes and "
        f"dtypes), with the computation done by Triton kernels (`@triton.jit`) of your own in "
        f"the same module. Parameters you declare as `{REFERENCE_CLASS}` does, in the same "
        f"order, get the same initial values (torch is seeded before each model is built).",
    ]
    if mf.description:
        lines.append(f"Description: {mf.description}")
    elif mf.model_doc:
        lines.append(f"Description: {mf.model_doc}")
    lines.append(f"The reference file (`{mf.path.name}`):\n```python\n{mf.source.rstrip()}\n```")
    if mf.has_candidate:
        lines.append(
            f"The file's own `{CANDIDATE_CLASS}` above is the current Triton implementation: "
            f"start from it; your kernel is timed against it (and against PyTorch eager).")
    return "\n\n".join(lines)


def build_task(mf: ModelFile, probed: dict[str, Any], *, suite: str, task_id: str,
               label: str, forbid_torch_compute: bool, extra: dict[str, Any] | None = None,
               difficulty: int | None = None) -> Task:
    """The task of a file in KernelBench's format (the ``local`` and ``kernelbench`` suites)."""
    forward = EntryPoint(
        name=CANDIDATE_CLASS, kind="nn.Module", params=mf.forward_params,
        doc=f"constructed as {CANDIDATE_CLASS}(*get_init_inputs()), called as "
            f"model(*get_inputs())",
    )
    reference = write_reference(mf, suite)
    return Task(
        suite=suite,
        id=task_id,
        instruction=instruction(mf, label),
        entry_points=[forward],
        harness=HARNESS,
        reference=str(reference),
        difficulty=difficulty,
        tolerances={k: list(v) for k, v in mf.tolerances.items()},
        outliers=OutlierSpec(),
        seeds=SEEDS,
        forbid_torch_compute=forbid_torch_compute,
        shapes_note=_shapes_note(mf, probed),
        timing_baseline=str(mf.path) if mf.has_candidate else "",
        eager="harness" if mf.has_candidate else "reference",
        extra={
            "format": FORMAT,
            # KernelBench's own harness checks what the judge's stage 1 does (its five
            # draws at its tolerances); a verdict failing later passes that protocol only
            "protocol": "kernelbench",
            "protocol_last_stage": "stage1",
            "file": str(mf.path),
            "sidecar": str(mf.sidecar) if mf.sidecar else None,
            "user_kernel": mf.has_candidate,
            "cases": _case_specs(mf, probed, small=False),
            "small_cases": _case_specs(mf, probed, small=True),
            **(extra or {}),
        },
    )


class ModelFileSuite(SuiteBase):
    """A suite whose tasks are files in KernelBench's format (``local``, ``kernelbench``):
    read once, on first use (``_read``), with the files that are no task kept by id and
    reason for ``unusable()`` and ``get``'s error."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] | None = None
        self._unusable: dict[str, str] = {}

    def _read(self) -> dict[str, Task]:
        raise NotImplementedError

    def _load(self) -> dict[str, Task]:
        if self._tasks is None:
            self._tasks = self._read()
        return self._tasks

    def tasks(self) -> list[Task]:
        return list(self._load().values())

    def get(self, task_id: str) -> Task:
        return lookup_task(self.name, self._load(), task_id, self._unusable)

    def unusable(self) -> dict[str, str]:
        self._load()
        return dict(self._unusable)


class LocalSuite(ModelFileSuite):
    name = SUITE_NAME
    description = (
        "your own operators: a folder (or one file) of PyTorch references in KernelBench's "
        "format (Model, get_inputs, get_init_inputs; optionally your Triton ModelNew to beat); "
        "candidates write ModelNew with Triton kernels"
    )

    def __init__(self, options: LocalOptions | None = None) -> None:
        super().__init__()
        self.options = options if options is not None else LocalOptions()
        if not self.options.path:
            raise InputError("[suite] path: name a task file in KernelBench's format or a "
                             "folder of them (suite 'local')")
        self.root = Path(self.options.path).expanduser()
        if not self.root.exists():
            raise InputError(f"[suite] path: {self.root} does not exist")

    def _read(self) -> dict[str, Task]:
        files = task_files(self.root)
        if not files:
            raise InputError(f"[suite] path: {self.root} holds no .py task files")
        return load_tasks(files, SUITE_NAME, self._unusable, lambda mf: (
            mf.stem, f"the operator of `{mf.path.name}`", {}, None),
            forbid_torch_compute=self.options.forbid_torch_compute)


def load_tasks(files: list[Path], suite: str, unusable: dict[str, str], identify: Any, *,
               forbid_torch_compute: bool) -> dict[str, Task]:
    """The tasks of ``files``; ``unusable`` gets each file that cannot be one, with why.
    ``identify(model_file)`` gives (task id, label in the instruction, extra, difficulty)."""
    read: list[ModelFile] = []
    for path in files:
        try:
            read.append(read_model_file(path))
        except ModelFileError as exc:
            unusable[path.stem] = str(exc)
    probed = probe(read) if read else {}
    tasks: dict[str, Task] = {}
    for mf in read:
        task_id, label, extra, difficulty = identify(mf)
        result = probed.get(str(mf.path)) or {}
        if result.get("error"):
            unusable[task_id] = result["error"]
            continue
        if task_id in tasks:
            unusable[f"{task_id} ({mf.path})"] = f"{mf.path}: a second task named {task_id}"
            continue
        tasks[task_id] = build_task(mf, result.get("cases") or {}, suite=suite, task_id=task_id,
                                    label=label, forbid_torch_compute=forbid_torch_compute,
                                    extra=extra, difficulty=difficulty)
    if unusable:
        log.warning("%s: %d task file(s) unusable: %s", suite, len(unusable),
                    "; ".join(unusable.values()))
    return tasks
