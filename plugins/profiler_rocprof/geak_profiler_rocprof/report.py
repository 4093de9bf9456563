"""The counters asked of rocprofv3, and its CSV files read back as ``KernelCounters``.

``rocprofv3 --kernel-trace --pmc ... --output-format csv -d OUT -o NAME`` writes
``NAME_kernel_trace.csv`` (one row per kernel dispatch) and ``NAME_counter_collection.csv``
(one row per dispatch and counter: ``Counter_Name``, ``Counter_Value``) into ``OUT``, or
into a ``pass_1`` folder below it when counters are collected. Both files carry
``Dispatch_Id`` and ``Correlation_Id``. The column names changed across ROCm releases
(``Private_Segment_Size`` / ``Group_Segment_Size`` in the 6.x kernel trace,
``Scratch_Size`` / ``LDS_Block_Size`` with the register counts later); either is read.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from geak_core.api.profiling import KernelCounters

FETCH_SIZE = "FETCH_SIZE"  # KiB read from HBM (TCC_EA0 read requests x their size / 1024)
WRITE_SIZE = "WRITE_SIZE"  # KiB written to HBM
VALU_BUSY = "VALUBusy"  # % of GPU time the vector ALUs process instructions
MFMA_UTIL = "MfmaUtil"  # % of GPU time (x CUs) the matrix (MFMA) units are busy
OCCUPANCY = "OccupancyPercent"  # waves resident, % of the maximum
COUNTERS: tuple[str, ...] = (FETCH_SIZE, WRITE_SIZE, VALU_BUSY, MFMA_UTIL, OCCUPANCY)

KERNEL_TRACE = "kernel_trace.csv"
COUNTER_COLLECTION = "counter_collection.csv"


def read_run(out: Path) -> list[KernelCounters]:
    """The dispatches rocprofv3 wrote anywhere under ``out``, in dispatch order (start
    time, then dispatch id), with their counters; ``ValueError`` when it wrote nothing
    readable."""
    traces = sorted(out.rglob("*" + KERNEL_TRACE))
    collections = sorted(out.rglob("*" + COUNTER_COLLECTION))
    if not traces and not collections:
        raise ValueError(f"rocprofv3 wrote no *_{KERNEL_TRACE} or *_{COUNTER_COLLECTION} under {out}")
    counters: dict[str, dict[str, float]] = {}
    dispatched: dict[str, Mapping[str, str]] = {}
    for path in collections:
        for row in _rows(path, ("Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")):
            value = _number(row["Counter_Value"])
            if value is not None:
                counters.setdefault(row["Dispatch_Id"], {})[row["Counter_Name"]] = value
            dispatched.setdefault(row["Dispatch_Id"], row)
    for path in traces:
        for row in _rows(path, ("Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp")):
            dispatched[row["Dispatch_Id"]] = {**dispatched.get(row["Dispatch_Id"], {}), **row}
    if not dispatched:
        raise ValueError(f"rocprofv3's files under {out} hold no kernel dispatch")
    order = sorted(dispatched, key=lambda d: (_number(dispatched[d].get("Start_Timestamp", "")) or 0.0,
                                               _number(d) or 0.0))
    return [_kernel(dispatched[d], counters.get(d, {})) for d in order]


def _rows(path: Path, required: Iterable[str]) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise ValueError(f"{path} lacks the column(s) {', '.join(missing)}"
                                 + (" (empty file)" if not reader.fieldnames else ""))
            rows = list(reader)
    except (OSError, csv.Error) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    if any(None in row for row in rows):
        raise ValueError(f"{path} has a row with more fields than its header")
    return rows


def _kernel(row: Mapping[str, str], counters: Mapping[str, float]) -> KernelCounters:
    def field(*names: str) -> float | None:
        return next((v for v in (_number(row.get(n, "")) for n in names) if v is not None), None)

    def integer(*names: str) -> int | None:
        value = field(*names)
        return None if value is None else round(value)

    start, end = field("Start_Timestamp"), field("End_Timestamp")
    vgprs, agprs = integer("VGPR_Count"), integer("Accum_VGPR_Count")
    fetched, written = counters.get(FETCH_SIZE), counters.get(WRITE_SIZE)
    block = _dims(row, "Workgroup_Size") or _single(integer("Workgroup_Size"))
    return KernelCounters(
        name=row.get("Kernel_Name", "") or "?",
        duration_us=(end - start) / 1000.0 if start is not None and end is not None and end >= start else None,
        dram_bytes=(fetched + written) * 1024.0 if fetched is not None and written is not None else None,
        sm_pct=counters.get(VALU_BUSY),
        tensor_pct=counters.get(MFMA_UTIL),
        occupancy_pct=counters.get(OCCUPANCY),
        registers_per_thread=None if vgprs is None else vgprs + (agprs or 0),
        spilled_bytes=integer("Scratch_Size", "Private_Segment_Size"),
        shared_bytes_per_block=integer("LDS_Block_Size", "Group_Segment_Size"),
        grid=_workgroups(_dims(row, "Grid_Size") or _single(integer("Grid_Size")), block),
        block=block,
    )


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except (AttributeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _dims(row: Mapping[str, str], prefix: str) -> tuple[int, ...] | None:
    values = [_number(row.get(f"{prefix}_{axis}", "")) for axis in "XYZ"]
    return None if any(v is None for v in values) else tuple(round(v) for v in values)  # type: ignore[arg-type]


def _single(size: int | None) -> tuple[int, ...] | None:
    return None if size is None else (size,)


def _workgroups(grid: tuple[int, ...] | None, block: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The grid in workgroups: HSA gives it in work-items per axis."""
    if grid is None or block is None or len(grid) != len(block) or 0 in block:
        return None
    return tuple(math.ceil(g / b) for g, b in zip(grid, block, strict=True))
