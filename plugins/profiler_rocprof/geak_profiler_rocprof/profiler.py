"""The ``rocprof`` profiler: AMD's rocprofv3 around the judge's profiled child."""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.api.components import ProfilerBase
from geak_core.api.profiling import KernelCounters, ProfileLaunch

from geak_profiler_rocprof.report import COUNTERS, read_run

OUTPUT_NAME = "geak"
# What rocprofv3 printed, kept in a ValueError's message: the end of it says why it failed.
OUTPUT_TAIL_CHARS = 1500
# Where a rocprofv3 not on PATH is looked for, in order (a glob's matches newest first).
SEARCHED = ("/opt/rocm/bin", "/opt/rocm-*/bin")


@dataclass
class RocprofProfilerOptions:
    """Where rocprofv3 is and what more it is told (the recipe's ``[profiler]`` table)."""

    # The rocprofv3 executable; empty: found on PATH, else in /opt/rocm/bin, /opt/rocm-*/bin.
    path: str = ""
    # More rocprofv3 options, put after the plugin's own and before the profiled command.
    extra_args: list[str] = field(default_factory=list)
    # The counters collected, in one pass (see README.md for what each is and what the
    # plugin reads of them); fewer when a GPU cannot count them all at once.
    counters: list[str] = field(default_factory=lambda: list(COUNTERS))

    def __post_init__(self) -> None:
        if not self.counters:
            raise ValueError("counters must name at least one counter (rocprofv3 --pmc)")


def search_folders() -> list[str]:
    """``SEARCHED`` expanded on this machine: the folders that exist, in order."""
    folders = []
    for pattern in SEARCHED:
        folders += sorted(glob.glob(pattern), key=_version, reverse=True)
    return folders


def find_rocprofv3(path: str = "") -> str | None:
    """The rocprofv3 executable to run: ``path`` when given (None unless it is executable),
    else the first on PATH, else the first in ``search_folders()``."""
    if path:
        return path if _executable(path) else None
    found = shutil.which("rocprofv3")
    if found:
        return found
    candidates = (os.path.join(folder, "rocprofv3") for folder in search_folders())
    return next((c for c in candidates if _executable(c)), None)


def missing_reason(path: str = "") -> str:
    if path:
        return f"rocprofv3 is not an executable file at {path} (the [profiler] path)"
    return (f"rocprofv3 was not found: looked on PATH and in {', '.join(SEARCHED)}; "
            "install ROCm's rocprofiler-sdk or set [profiler] path")


def _version(path: str) -> tuple[int, ...]:
    """``/opt/rocm-6.10.0/bin`` sorts after ``/opt/rocm-6.9.0/bin``."""
    return tuple(int(n) for n in re.findall(r"\d+", path))


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


class RocprofProfiler(ProfilerBase):
    """rocprofv3's kernel trace (time, registers, scratch, LDS, launch shape) and counters
    (HBM bytes, VALU and MFMA busy, occupancy) of every kernel the child dispatches.
    rocprofv3 has no profiling region: it records the whole child, and the kernels come
    back in dispatch order for the judge to keep those of the profiled calls."""

    vendors = ("amd",)

    def __init__(self, options: RocprofProfilerOptions | None = None) -> None:
        self.settings = options or RocprofProfilerOptions()

    def unusable(self) -> list[str]:
        if find_rocprofv3(self.settings.path) is None:
            return [missing_reason(self.settings.path)]
        return []

    def launch(self) -> ProfileLaunch:
        """rocprofv3 with the kernel trace and the counters, CSV files into ``{out}``.
        ``FileNotFoundError`` when there is no rocprofv3, saying where it was looked for."""
        rocprofv3 = find_rocprofv3(self.settings.path)
        if rocprofv3 is None:
            raise FileNotFoundError(missing_reason(self.settings.path))
        return ProfileLaunch(
            wrapper=(rocprofv3, "--kernel-trace", "--pmc", *self.settings.counters,
                     "--output-format", "csv", "-d", "{out}", "-o", OUTPUT_NAME,
                     *self.settings.extra_args, "--"))

    def read(self, out: str, output: str) -> list[KernelCounters]:
        try:
            return read_run(Path(out))
        except ValueError as exc:
            tail = output.strip()[-OUTPUT_TAIL_CHARS:]
            raise ValueError(f"{exc}" + (f"; rocprofv3 printed: {tail}" if tail else "")) from None
