"""The ``proton`` profiler: Triton's own profiler, started inside the judge's child."""

from __future__ import annotations

import glob
import importlib
from pathlib import Path
from typing import Any

from geak_core.api.components import ProfilerBase
from geak_core.api.profiling import KernelCounters, ProfileLaunch

from geak_profiler_proton.child import SESSION_NAME
from geak_profiler_proton.report import read_hatchet

SESSION = "geak_profiler_proton.child:session"
# The device files of the GPUs proton traces: NVIDIA's (CUPTI) and AMD's (roctracer).
GPU_DEVICE_FILES = ("/dev/nvidia[0-9]*", "/dev/kfd")
# What the child printed, kept in a ValueError's message: the end of it says why it failed.
OUTPUT_TAIL_CHARS = 1500


class ProtonProfiler(ProfilerBase):
    """Each kernel's time from proton (CUPTI on NVIDIA, roctracer on AMD), and the FLOPs and
    bytes its Triton ``launch_metadata`` declares; no wrapper: the child enters
    ``geak_profiler_proton.child.session`` around the profiled calls. Every other counter
    is None (proton reads no hardware counters in this mode)."""

    def __init__(self, options: Any = None) -> None:
        pass

    def unusable(self) -> list[str]:
        if not any(glob.glob(pattern) for pattern in GPU_DEVICE_FILES):
            return ["no NVIDIA or AMD GPU here (no /dev/nvidia* or /dev/kfd): proton traces GPU kernels"]
        try:
            importlib.import_module("triton.profiler")
        except Exception as exc:  # a Triton without proton fails in many ways
            return [f"Triton's proton profiler (triton.profiler) cannot be imported: "
                    f"{type(exc).__name__}: {exc}"]
        return []

    def launch(self) -> ProfileLaunch:
        return ProfileLaunch(in_child=SESSION)

    def read(self, out: str, output: str) -> list[KernelCounters]:
        """The launches of ``out/proton.hatchet`` (any one ``*.hatchet`` there, for a
        proton that names its file otherwise)."""
        folder = Path(out)
        tree = folder / f"{SESSION_NAME}.hatchet"
        if not tree.is_file():
            others = sorted(folder.glob("*.hatchet"))
            if not others:
                tail = output.strip()[-OUTPUT_TAIL_CHARS:]
                raise ValueError(f"proton wrote no tree in {folder} (no {tree.name})"
                                 + (f"; the child printed: {tail}" if tail else ""))
            tree = others[0]
        kernels = read_hatchet(tree)
        if not kernels:
            raise ValueError(f"proton's tree {tree} holds no kernel launch: no kernel ran in the "
                             "profiled calls, or proton could not trace this device")
        return kernels
