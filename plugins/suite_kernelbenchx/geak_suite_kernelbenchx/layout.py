"""Where a KernelBench-X checkout keeps what the suite reads.

``path`` may name the checkout itself (it holds ``data/kernelbenchx/``), its
``data/`` folder, or the ``data/kernelbenchx/`` folder. From the task folder
the suite finds, when they exist:

* ``<data>/kernelbenchx_v1.json``: descriptions, signatures, difficulty,
  dtypes, quantization specs and precision thresholds, by ``Category/file.py``;
* ``<checkout>/metrics/golden_metrics/<task>_perf.py``: performance scripts;
* ``<checkout>/metrics/golden_results/<gpu>/<task>.json``: published timings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.errors import InputError

TASK_DIR = "kernelbenchx"
JSON_NAME = "kernelbenchx_v1.json"


@dataclass(frozen=True)
class Layout:
    tasks_dir: Path  # .../data/kernelbenchx: one folder per category
    json_path: Path | None
    perf_dir: Path | None
    golden_dir: Path | None

    def category_dirs(self) -> list[Path]:
        return sorted(p for p in self.tasks_dir.iterdir()
                      if p.is_dir() and not p.name.startswith((".", "_")))

    def task_files(self) -> list[Path]:
        return [f for d in self.category_dirs() for f in sorted(d.glob("*.py"))
                if not f.name.startswith("_")]

    def perf_script(self, stem: str) -> Path | None:
        if self.perf_dir is None:
            return None
        path = self.perf_dir / f"{stem}_perf.py"
        return path if path.is_file() else None


def locate(path: str) -> Layout:
    if not path:
        raise InputError(
            "[suite] path: no KernelBench-X data given; set path to your checkout (or its "
            "data/kernelbenchx folder) or the environment variable GEAK_KERNELBENCHX_DATA"
        )
    given = Path(os.path.expanduser(path)).resolve()
    if not given.is_dir():
        raise InputError(f"[suite] path: {given} is not a folder")
    for candidate in (given / "data" / TASK_DIR, given / TASK_DIR, given):
        if candidate.is_dir() and any(p.is_dir() and any(p.glob("*.py"))
                                      for p in candidate.iterdir()):
            tasks_dir = candidate
            break
    else:
        raise InputError(
            f"[suite] path: {given} holds no KernelBench-X task folders (expected "
            f"data/{TASK_DIR}/<Category>/<task>.py below it, or it to be such a folder)"
        )
    data_dir = tasks_dir.parent
    root = data_dir.parent
    json_path = data_dir / JSON_NAME
    perf_dir = root / "metrics" / "golden_metrics"
    golden_dir = root / "metrics" / "golden_results"
    return Layout(
        tasks_dir=tasks_dir,
        json_path=json_path if json_path.is_file() else None,
        perf_dir=perf_dir if perf_dir.is_dir() else None,
        golden_dir=golden_dir if golden_dir.is_dir() else None,
    )


def load_metadata(path: Path) -> dict[str, dict[str, Any]]:
    """The metadata JSON by file name (``gelu.py``); an input error names a malformed file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of task objects")
    found: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(data):
        if not (isinstance(item, dict) and isinstance(item.get("file"), str)):
            raise InputError(f"{path}: item {index} has no 'file' string")
        found[Path(item["file"]).name] = item
    return found
