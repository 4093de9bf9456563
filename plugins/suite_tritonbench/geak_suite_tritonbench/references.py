"""Reference modules: the kernel part of each task file, written where the judge imports it.

Importing a whole task file would run its test at module level (on ``'cuda'``), so a
task's reference is the file's kernel part, written once to a cache folder
(``$GEAK_CACHE_DIR`` or ``~/.cache/geak-core``) with the original's line numbers.
KernelBench-X's task files have the same format; its suite writes its references here too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from geak_core.api.errors import InputError
from geak_core.engine.store import CACHE_ENV, cache_dir

from geak_suite_tritonbench.taskfile import TaskFile


def reference_folder(suite: str, tasks_dir: Path) -> Path:
    """Where the references of the task files in ``tasks_dir`` are written (one folder per
    data folder, so two copies of the data never share references)."""
    digest = hashlib.sha256(str(tasks_dir).encode()).hexdigest()[:16]
    return cache_dir(suite) / digest


def write_reference(folder: Path, task_file: TaskFile) -> Path:
    """The kernel part as an importable file in ``folder``; rewritten only when its content
    changed."""
    target = folder / task_file.path.name
    content = task_file.kernel_source
    from geak_core.engine.store import atomic_write

    try:
        if not target.is_file() or target.read_text(encoding="utf-8") != content:
            atomic_write(target, content)
    except OSError as exc:
        raise InputError(
            f"cannot write the reference code of {task_file.path.name} to {folder} ({exc}); "
            f"set {CACHE_ENV} to a writable folder"
        ) from None
    return target
