"""Where the TritonBench-G files are, for each accepted folder layout.

Accepted ``path`` values:

* the original release's ``data/`` folder: ``TritonBench_G_v1/`` (task files)
  and ``TritonBench_G_v1.json`` (instructions, difficulty) side by side;
* the task folder itself (``.../TritonBench_G_v1/``), from either release;
* GEAK-eval's revised copy ``.../TritonBench/data/`` or
  ``.../TritonBench/data/TritonBench_G_v1/``, whose performance scripts live in
  ``.../TritonBench/performance_metrics/perf_G/golden_metrics/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.errors import InputError

TASK_FOLDER = "TritonBench_G_v1"
INSTRUCTION_JSON = "TritonBench_G_v1.json"
PERF_SUFFIX = "_perf.py"


@dataclass(frozen=True)
class DataLayout:
    tasks_dir: Path
    json_path: Path | None
    perf_dir: Path | None

    def task_files(self) -> list[Path]:
        return sorted(p for p in self.tasks_dir.glob("*.py") if not p.name.startswith("__"))

    def perf_script(self, stem: str) -> Path | None:
        if self.perf_dir is None:
            return None
        script = self.perf_dir / f"{stem}{PERF_SUFFIX}"
        return script if script.is_file() else None


def _expand(path: str) -> Path:
    return Path(path).expanduser().resolve()


def locate(path: str, json_path: str = "", perf_dir: str = "") -> DataLayout:
    """Resolve the folders and files for ``path``; InputError names what is missing."""
    if not path:
        raise InputError(
            "suite 'tritonbench' needs [suite] path (or the environment variable "
            f"GEAK_TRITONBENCH_DATA): the TritonBench data/ folder, or its {TASK_FOLDER}/ "
            "folder of task files"
        )
    root = _expand(path)
    if not root.exists():
        raise InputError(f"[suite] path: {root} does not exist")
    if not root.is_dir():
        raise InputError(f"[suite] path: {root} is not a folder")
    if (root / TASK_FOLDER).is_dir():
        tasks_dir = root / TASK_FOLDER
    elif any(p.suffix == ".py" for p in root.iterdir()):
        tasks_dir = root
    else:
        raise InputError(
            f"[suite] path: {root} holds neither a {TASK_FOLDER}/ folder nor task .py files "
            f"(expected the TritonBench data/ folder, or its {TASK_FOLDER}/ folder)"
        )

    if json_path:
        found_json: Path | None = _expand(json_path)
        if not found_json.is_file():
            raise InputError(f"[suite] json: {found_json} does not exist")
    else:
        found_json = next(
            (p for p in (tasks_dir.parent / INSTRUCTION_JSON, tasks_dir / INSTRUCTION_JSON)
             if p.is_file()),
            None,
        )

    if perf_dir:
        found_perf: Path | None = _expand(perf_dir)
        if not found_perf.is_dir():
            raise InputError(f"[suite] perf_scripts: {found_perf} is not a folder")
    else:
        candidates = (
            tasks_dir.parent / "golden_metrics",
            tasks_dir.parent / "performance_metrics" / "perf_G" / "golden_metrics",
            tasks_dir.parent.parent / "performance_metrics" / "perf_G" / "golden_metrics",
        )
        found_perf = next((p for p in candidates if p.is_dir()), None)
    return DataLayout(tasks_dir=tasks_dir, json_path=found_json, perf_dir=found_perf)


@dataclass(frozen=True)
class Instructions:
    """What the instruction JSON says about one task file."""

    simple: str
    complete: str
    difficulty: int | None
    repo: str = ""
    output: str = ""  # the reference code without its test, as the JSON stores it


def _difficulty(value: Any, where: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        level = int(str(value).strip())
    except ValueError:
        raise InputError(f"{where}: difficulty {value!r} is not a number 1..5") from None
    if not 1 <= level <= 5:
        raise InputError(f"{where}: difficulty {level} is outside 1..5")
    return level


def load_instructions(path: Path) -> dict[str, Instructions]:
    """Entries of ``TritonBench_G_v1.json`` by file name; InputError names a bad entry."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(data, list):
        raise InputError(
            f"{path}: expected a JSON list of objects with 'file', 'simp_instru', 'comp_instru' "
            f"and 'difficulty', got {type(data).__name__}"
        )
    found: dict[str, Instructions] = {}
    for index, item in enumerate(data):
        where = f"{path}: item {index}"
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise InputError(f"{where}: expected an object with a string 'file' field")
        name = item["file"]
        found[name if name.endswith(".py") else name + ".py"] = Instructions(
            simple=str(item.get("simp_instru") or ""),
            complete=str(item.get("comp_instru") or ""),
            difficulty=_difficulty(item.get("difficulty"), f"{where} ({name})"),
            repo=str(item.get("repo") or ""),
            output=str(item.get("output") or ""),
        )
    return found
