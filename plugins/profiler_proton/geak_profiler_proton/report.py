"""Proton's hatchet tree read back as ``KernelCounters``.

Proton's tree writer (``TreeData::dumpHatchet`` in Triton's ``third_party/proton``) dumps a
JSON list of two objects: the call tree from its ``ROOT`` frame, then the devices by type
and index. Each node is ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}``,
children in the order they were first seen. A node that saw kernels carries the kernel
metrics ``"time (ns)"`` (summed over its launches), ``"count"`` (launches), ``"device_id"``
and ``"device_type"``; the ``triton`` launch hook adds what a kernel's ``launch_metadata``
declares (``"flops8"``, ``"flops16"``, ``"flops32"``, ``"flops64"``, ``"flops"``,
``"bytes"``), likewise summed. Launches of the same kernel in the same context share one
node. Kernels launched while launch metadata was computed sit under a
``__proton_launch_metadata`` frame and are not the candidate's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from geak_core.api.profiling import KernelCounters

TIME = "time (ns)"
COUNT = "count"
BYTES = "bytes"
FLOP_METRICS = ("flops8", "flops16", "flops32", "flops64", "flops")
METADATA_FRAME = "__proton_launch_metadata"


def read_hatchet(path: Path) -> list[KernelCounters]:
    """The kernel launches of one proton tree file; ``ValueError`` when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not proton's JSON tree: {exc}") from None
    if not (isinstance(data, list) and data and isinstance(data[0], dict) and "children" in data[0]):
        raise ValueError(f"{path} is not proton's tree: no list starting with a ROOT node")
    return list(_launches(data[0]))


def _launches(node: Mapping[str, Any]) -> Iterator[KernelCounters]:
    """A node's launches before its children's (the order proton first saw them), one
    ``KernelCounters`` per launch."""
    metrics = node.get("metrics") or {}
    count = metrics.get(COUNT)
    if _is_number(metrics.get(TIME)) and _is_number(count) and count > 0:
        declared = {k: float(v) for k, v in metrics.items() if k in (*FLOP_METRICS, BYTES) and _is_number(v)}
        yield from _per_launch(_frame_name(node), float(metrics[TIME]), int(count), declared)
    for child in node.get("children") or ():
        if isinstance(child, Mapping) and _frame_name(child) != METADATA_FRAME:
            yield from _launches(child)


def _per_launch(name: str, time_ns: float, count: int, declared: Mapping[str, float]) -> Iterator[KernelCounters]:
    flops = [declared[k] for k in FLOP_METRICS if k in declared]
    launch = KernelCounters(
        name=name,
        duration_us=time_ns / count / 1000.0,
        flops=sum(flops) / count if flops else None,
        dram_bytes=declared[BYTES] / count if BYTES in declared else None,
    )
    for _ in range(count):
        yield launch


def _frame_name(node: Mapping[str, Any]) -> str:
    frame = node.get("frame")
    return str(frame.get("name", "?")) if isinstance(frame, Mapping) else "?"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
