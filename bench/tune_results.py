"""What the two tuning benchmarks share (``tune_published.py``, ``tune_rocm_recovery.py``).

* ``ResultsFile``: the ``--json`` file, one row per record or task, rewritten atomically after
  each, with the settings it was measured under; run again, it keeps the finished rows (a row
  of a judge error is done again) and refuses other settings.
* ``StartLimit``: ``--limit-s``, no record or task starts after so many seconds.
* ``judge_once``: one candidate judged through ``evaluate_many``, as ``geak-core tune`` does.
* ``environment``: the versions and device a file's figures come from.
"""

from __future__ import annotations

import json
import math
import platform
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REDONE = ("judge error",)  # row statuses a later run does again


class SettingsChanged(Exception):
    """The ``--json`` file holds rows measured under other settings."""


class ResultsFile:
    """The rows so far, by ``key``, and the file they are written to after each one."""

    def __init__(self, path: str, settings: dict[str, Any], key: str,
                 summarize: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> None:
        self.path = path
        self.settings = settings
        self.key = key
        self.summarize = summarize
        self.environment: dict[str, Any] = {}
        self.rows: dict[str, dict[str, Any]] = {}
        earlier = read(path) if path and Path(path).exists() else None
        if earlier is not None:
            self.environment = earlier["environment"]
            for name, value in settings.items():
                if earlier["settings"].get(name, value) != value:
                    raise SettingsChanged(
                        f"{path} holds rows measured with {name} = {earlier['settings'][name]!r}, not "
                        f"{value!r}: choose another --json, or run with the same settings")
            self.rows = {row[key]: row for row in earlier["rows"] if row.get("status") not in REDONE}

    def done(self, name: str) -> bool:
        return name in self.rows

    def put(self, row: dict[str, Any]) -> None:
        self.rows[row[self.key]] = row
        self.write()

    def data(self) -> dict[str, Any]:
        rows = list(self.rows.values())
        return {"environment": self.environment, "settings": self.settings, "rows": rows,
                "summary": self.summarize(rows)}

    def write(self) -> None:
        if not self.path:
            return
        from geak_core.engine.store import atomic_write

        atomic_write(self.path, json.dumps(self.data(), indent=2, default=str) + "\n")


def read(path: str) -> dict[str, Any]:
    """A ``--json`` file as written (``--table`` reads it too)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{path}: not a results file of the tuning benchmarks (no 'rows' list)")
    data.setdefault("settings", {})
    data.setdefault("environment", {})
    return data


def read_merged(paths: str, summarize: Any) -> dict[str, Any]:
    """``--table A.json,B.json``: the rows of several ``--json`` files of one benchmark (its
    shards, one per GPU) in one table, each row once, the summary made anew from them; the
    settings and environment of the first file."""
    files = [read(p.strip()) for p in paths.split(",") if p.strip()]
    if len(files) == 1:
        return files[0]
    seen: set[tuple[Any, Any]] = set()
    rows: list[dict[str, Any]] = []
    for data in files:
        for row in data["rows"]:
            key = (row.get("candidate"), row.get("task"))
            if key not in seen:
                seen.add(key)
                rows.append(row)
    merged = dict(files[0])
    merged["rows"] = rows
    merged["summary"] = summarize(rows)
    return merged


class StartLimit:
    """``--limit-s``: True from ``may_start`` until that many seconds have passed (0: always)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def may_start(self) -> bool:
        return not self.seconds or self.elapsed() < self.seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def judge_once(judge: Any, task: Any, candidate: Any) -> Any:
    """The judge's verdict on one candidate (the way ``geak-core tune`` judges an untuned one)."""
    from geak_core.api.components import EvalJob

    ((_, verdict),) = list(judge.evaluate_many([EvalJob(task, candidate)]))
    return verdict


def geometric_mean(values: Iterable[float]) -> float | None:
    found = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return statistics.geometric_mean(found) if found else None


def environment(mode: str) -> dict[str, Any]:
    """Versions, the mode asked for and the start time; the device is added from the first
    verdict (``EvalResult.device``: what the judge ran on)."""
    found: dict[str, Any] = {"mode": mode, "python": platform.python_version(),
                             "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        import torch
        import triton

        found.update(torch=torch.__version__, triton=triton.__version__)
    except ImportError:
        pass
    return found


def note_device(env: dict[str, Any], verdict: Any) -> None:
    """Add the device and mode the judge names in ``verdict`` to those of the file (a file
    resumed on another machine names both)."""
    if verdict is not None and verdict.device:
        env["devices"] = sorted({*env.get("devices", []), verdict.device})
        env["judged_modes"] = sorted({*env.get("judged_modes", []), verdict.mode})


def device_text(env: dict[str, Any]) -> str:
    """``DEVICE (MODE)`` for a table's title."""
    devices = ", ".join(env.get("devices", [])) or "?"
    modes = ", ".join(env.get("judged_modes", [])) or env.get("mode", "?")
    return f"{devices} ({modes}), torch {env.get('torch', '?')}, triton {env.get('triton', '?')}"


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def cell(text: Any, width: int = 80) -> str:
    """One markdown cell: the first line, clipped, with no column separator in it."""
    line = str(text).splitlines()[0] if text else ""
    return (line[: width - 1] + "…" if len(line) > width else line).replace("|", "/") or "-"
