"""The benchmark's published PyTorch timings (``metrics/golden_results/<gpu>/<task>.json``).

KernelBench-X measured each task's PyTorch reference on six GPUs (folders
``4090``, ``5090``, ``a100``, ``h20``, ``h800``, ``l20``). Each file lists one
row per input of the task's performance script: ``input_size`` (the input's
shapes, scalars as they are), ``ms``, ``GB/s``, ``TFLOPS``. Inputs that failed
in their run have no row, so rows are matched to the judge's ``perf_<i>``
cases by input size, not by position.

A device matches a folder when the folder's name is a whole word of the
device name, ignoring case: ``NVIDIA H800`` is ``h800``, ``NVIDIA A100-SXM4-80GB``
is ``a100``, ``NVIDIA H200`` is none (``h20`` is not a word of it), nor is
``NVIDIA H100 80GB HBM3``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def machine_for(device_name: str, machines: list[str] | tuple[str, ...]) -> str | None:
    """The folder of ``machines`` the device named ``device_name`` is, or None."""
    for machine in machines:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(machine)}(?![A-Za-z0-9])", device_name,
                     re.IGNORECASE):
            return machine
    return None


def load_rows(golden_dir: Path, stem: str) -> dict[str, list[dict[str, Any]]]:
    """``{machine: [{"input_size", "ms", "gbs", "tflops"}, ...]}`` for one task; unreadable
    or malformed files are left out."""
    found: dict[str, list[dict[str, Any]]] = {}
    if not golden_dir.is_dir():
        return found
    for folder in sorted(p for p in golden_dir.iterdir() if p.is_dir()):
        path = folder / f"{stem}.json"
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, list):
            continue
        rows = []
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("ms"), (int, float)):
                rows.append({"input_size": item.get("input_size"), "ms": float(item["ms"]),
                             "gbs": item.get("GB/s"), "tflops": item.get("TFLOPS")})
        found[folder.name] = rows
    return found


def input_size(description: Any) -> Any:
    """A performance input's description (``perf.describe``) in the ``input_size`` form:
    tensors as their shape lists, containers as lists, scalars as they are."""
    if isinstance(description, dict) and set(description) == {"shape", "dtype"}:
        return list(description["shape"])
    if isinstance(description, (list, tuple)):
        return [input_size(v) for v in description]
    if isinstance(description, dict):
        return [input_size(v) for v in description.values()]
    return description


def row_for(rows: list[dict[str, Any]], description: Any) -> dict[str, Any] | None:
    """The published row of the input described by ``description``, or None."""
    wanted = input_size(description)
    wrapped = wanted if isinstance(wanted, list) else [wanted]
    for row in rows:
        size = row.get("input_size")
        if size == wanted or size == wrapped or (isinstance(size, list) and size == [wanted]):
            return row
    return None
