"""The ``ncu`` profiler: NVIDIA Nsight Compute around the judge's profiled child."""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.api.components import ProfilerBase
from geak_core.api.profiling import KernelCounters, ProfileLaunch

from geak_profiler_ncu.report import METRICS, parse_raw_csv

REPORT_FILE = "ncu.csv"
# What ncu printed, kept in a ValueError's message: the end of it says why it failed.
OUTPUT_TAIL_CHARS = 1500


@dataclass
class NcuProfilerOptions:
    """Where ncu is and what more it is told (the recipe's ``[profiler]`` table)."""

    # The ncu executable; empty: found on PATH, else in the CUDA toolkit's and Nsight
    # Compute's folders (see README.md).
    path: str = ""
    # More ncu options, put after the plugin's own and before the profiled command.
    extra_args: list[str] = field(default_factory=list)
    # ncu's --clock-control: "none" leaves the GPU's clocks as the judge timed them (the
    # durations then compare with its timings); "base" locks them to base clocks, ncu's own
    # default, for counters that repeat across runs.
    clock_control: str = field(default="none", metadata={"choices": ["none", "base"]})


# Where an ncu not on PATH is looked for, in order (a glob's matches newest version first).
SEARCHED = ("$CUDA_HOME/bin", "/usr/local/cuda/bin", "/usr/local/cuda-*/bin",
            "/opt/nvidia/nsight-compute/*")


def search_folders() -> list[str]:
    """``SEARCHED`` expanded on this machine: the folders that exist, in order."""
    folders = []
    for pattern in SEARCHED:
        if pattern.startswith("$CUDA_HOME"):
            home = os.environ.get("CUDA_HOME")
            folders += [os.path.join(home, "bin")] if home else []
        else:
            folders += sorted(glob.glob(pattern), key=_version, reverse=True)
    return folders


def find_ncu(path: str = "") -> str | None:
    """The ncu executable to run: ``path`` when given (None unless it is executable), else
    the first on PATH, else the first in ``search_folders()``."""
    if path:
        return path if _executable(path) else None
    found = shutil.which("ncu")
    if found:
        return found
    return next((c for c in (os.path.join(f, "ncu") for f in search_folders()) if _executable(c)), None)


def missing_reason(path: str = "") -> str:
    if path:
        return f"ncu (Nsight Compute) is not an executable file at {path} (the [profiler] path)"
    return (f"ncu (Nsight Compute) was not found: looked on PATH and in {', '.join(SEARCHED)}; "
            "install Nsight Compute or set [profiler] path")


def _version(path: str) -> tuple[int, ...]:
    """``/usr/local/cuda-12.10/bin`` sorts after ``/usr/local/cuda-12.9/bin``."""
    return tuple(int(n) for n in re.findall(r"\d+", path))


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


class NcuProfiler(ProfilerBase):
    """Nsight Compute's counters for each kernel the child launches between its
    ``cudaProfilerStart`` and ``cudaProfilerStop``: time, DRAM and SM throughput, tensor pipes,
    occupancy, registers, local-memory stores, shared memory, launch shape and the top warp
    stalls (``geak_profiler_ncu.report.METRICS``; README.md says what each is)."""

    vendors = ("nvidia",)

    def __init__(self, options: NcuProfilerOptions | None = None) -> None:
        self.settings = options or NcuProfilerOptions()

    def unusable(self) -> list[str]:
        if find_ncu(self.settings.path) is None:
            return [missing_reason(self.settings.path)]
        return []

    def launch(self) -> ProfileLaunch:
        """ncu with profiling off until the child's ``cudaProfilerStart``, following the
        child's own children, one raw CSV row per launch written to ``{out}/ncu.csv`` (so that
        nothing the candidate prints can fall into the table). ``FileNotFoundError`` when
        there is no ncu, saying where it was looked for."""
        ncu = find_ncu(self.settings.path)
        if ncu is None:
            raise FileNotFoundError(missing_reason(self.settings.path))
        return ProfileLaunch(
            wrapper=(ncu, "--csv", "--page", "raw", "--print-units", "base",
                     "--profile-from-start", "off", "--target-processes", "all",
                     "--clock-control", self.settings.clock_control,
                     "--metrics", ",".join(METRICS), *self.settings.extra_args,
                     "--log-file", "{out}/" + REPORT_FILE),
            region=True)

    def read(self, out: str, output: str) -> list[KernelCounters]:
        report = Path(out) / REPORT_FILE
        tail = output.strip()[-OUTPUT_TAIL_CHARS:]
        if not report.is_file():
            raise ValueError(f"ncu wrote no report at {report}"
                             + (f"; it printed: {tail}" if tail else " and printed nothing"))
        try:
            return parse_raw_csv(report.read_text(encoding="utf-8", errors="replace"))
        except ValueError as exc:
            raise ValueError(f"cannot read {report}: {exc}"
                             + (f"; ncu printed: {tail}" if tail else "")) from None
