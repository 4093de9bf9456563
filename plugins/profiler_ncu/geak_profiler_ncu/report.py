"""The metrics asked of Nsight Compute, and its raw CSV page read back as ``KernelCounters``.

``ncu --csv --page raw --print-units base`` prints one row per profiled kernel launch, in
launch order (the ``ID`` column): a header row naming the launch columns ("ID", "Kernel
Name", "Block Size", "Grid Size", ...) and then one column per metric, a units row (empty
under the launch columns), then the launches. Values are quoted; numbers may carry thousands
separators ("1,234,567"), a metric the device cannot collect reads "n/a". Lines of ncu's own
("==PROF==", "==WARNING==", "==ERROR==") may come before and after the table.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping

from geak_core.api.profiling import KernelCounters

DURATION = "gpu__time_duration.sum"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
# All tensor pipes (the mma.sync HMMA and Hopper's wgmma GMMA alike), against the elapsed
# cycles as the SM and DRAM figures are, so the three compare.
TENSOR_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
THREADS = "launch__thread_count"
LOCAL_STORE_BYTES = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"
SHARED_STATIC = "launch__shared_mem_per_block_static"
SHARED_DYNAMIC = "launch__shared_mem_per_block_dynamic"
GRID_SIZE = "launch__grid_size"
BLOCK_SIZE = "launch__block_size"

# The warp states of ncu's "Warp State Statistics" that hold a warp back from issuing, as
# the average number of warps in each per issue-active cycle; "selected" (issuing) is not
# one of them.
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
TOP_STALLS = 3

METRICS: tuple[str, ...] = (
    DURATION, DRAM_PCT, DRAM_READ, DRAM_WRITE, SM_PCT, TENSOR_PCT, OCCUPANCY_PCT, REGISTERS,
    THREADS, LOCAL_STORE_BYTES, SHARED_STATIC, SHARED_DYNAMIC, GRID_SIZE, BLOCK_SIZE,
    *(STALL_METRIC.format(reason) for reason in STALL_REASONS),
)

_MICROSECONDS_PER = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
                     "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
_BYTE_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
                "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3, "Ti": 1024.0 ** 4}
_BYTE_UNIT = re.compile(r"^(K|M|G|T|Ki|Mi|Gi|Ti)?byte(?:/.*)?$")
_DIMS = re.compile(r"\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)")


def parse_raw_csv(text: str) -> list[KernelCounters]:
    """The launches of ncu's raw CSV page (``text``: the whole log, ncu's own lines and
    all), in launch order; ``ValueError`` when there is no table or no launch in it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        said = [line for line in lines if line.startswith(("==ERROR==", "==WARNING=="))]
        raise ValueError("no ncu CSV table (no header row starting with \"ID\")"
                         + (": " + " | ".join(said[-5:]) if said else ""))
    table = [line for line in lines[start:] if line.strip() and not line.startswith("==")]
    rows = list(csv.reader(table))
    header = rows[0]
    for number, row in enumerate(rows[1:], start=1):
        if len(row) != len(header):
            raise ValueError(f"ncu CSV row {number} has {len(row)} fields, its header {len(header)}")
    body = rows[1:]
    units: dict[str, str] = {}
    if body and body[0][0] == "":
        units = dict(zip(header, body.pop(0), strict=True))
    launches = [dict(zip(header, row, strict=True)) for row in body]
    if not launches:
        raise ValueError("ncu profiled no kernel in the region (its CSV table has no rows)")
    launches.sort(key=lambda r: _number(r.get("ID", "")) or 0.0)
    return [_kernel(launch, units) for launch in launches]


def _kernel(row: Mapping[str, str], units: Mapping[str, str]) -> KernelCounters:
    def value(metric: str) -> float | None:
        return _in_base_units(_number(row.get(metric, "")), units.get(metric, ""))

    def integer(metric: str) -> int | None:
        figure = value(metric)
        return None if figure is None else round(figure)

    duration = value(DURATION)
    if duration is not None:
        duration *= _MICROSECONDS_PER.get(units.get(DURATION, "") or "nsecond", 1e-3)
    return KernelCounters(
        name=row.get("Kernel Name", "") or "?",
        duration_us=duration,
        dram_pct=value(DRAM_PCT),
        dram_bytes=_total(value(DRAM_READ), value(DRAM_WRITE)),
        sm_pct=value(SM_PCT),
        tensor_pct=value(TENSOR_PCT),
        occupancy_pct=value(OCCUPANCY_PCT),
        registers_per_thread=integer(REGISTERS),
        spilled_bytes=_per_thread(value(LOCAL_STORE_BYTES), value(THREADS)),
        shared_bytes_per_block=_int_total(integer(SHARED_STATIC), integer(SHARED_DYNAMIC)),
        grid=_dims(row.get("Grid Size", "")) or _single(integer(GRID_SIZE)),
        block=_dims(row.get("Block Size", "")) or _single(integer(BLOCK_SIZE)),
        stalls=_top_stalls({reason: value(STALL_METRIC.format(reason)) for reason in STALL_REASONS}),
    )


def _number(text: str) -> float | None:
    """A value of the table: thousands separators dropped; None for "", "n/a" and text."""
    cleaned = text.strip().replace(",", "")
    if not cleaned:
        return None
    try:
        figure = float(cleaned)
    except ValueError:
        return None
    return figure if math.isfinite(figure) else None


def _in_base_units(figure: float | None, unit: str) -> float | None:
    """Bytes for a byte unit (``Kbyte``, ``Mbyte/block``, ...); other units as printed
    (durations are converted by the caller)."""
    if figure is None:
        return None
    match = _BYTE_UNIT.match(unit)
    return figure * _BYTE_PREFIX[match.group(1) or ""] if match else figure


def _total(*parts: float | None) -> float | None:
    return None if any(p is None for p in parts) else float(sum(parts))  # type: ignore[arg-type]


def _int_total(*parts: int | None) -> int | None:
    return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]


def _per_thread(total: float | None, threads: float | None) -> int | None:
    """Local-memory bytes stored per thread, rounded up (a spill is at least 4 bytes)."""
    if total is None or not threads:
        return None
    return math.ceil(total / threads)


def _dims(text: str) -> tuple[int, ...] | None:
    """``(128, 1, 1)`` as ncu prints a block or grid; None for anything else."""
    match = _DIMS.fullmatch(text.strip())
    return tuple(int(p) for p in match.group(1).split(",")) if match else None


def _single(size: int | None) -> tuple[int, ...] | None:
    return None if size is None else (size,)


def _top_stalls(ratios: Mapping[str, float | None]) -> tuple[tuple[str, float], ...]:
    """The largest stall reasons, each as its percentage of all the stalls read."""
    known = {reason: r for reason, r in ratios.items() if r is not None and r > 0}
    total = sum(known.values())
    if not total:
        return ()
    ranked = sorted(known.items(), key=lambda item: -item[1])[:TOP_STALLS]
    return tuple((reason, round(100.0 * r / total, 1)) for reason, r in ranked)
