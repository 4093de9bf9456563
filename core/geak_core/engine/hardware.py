"""Which hardware profile a run uses: one route and one matcher for the recipe's
``[hardware] profile`` and the judge's ``[evaluator] hardware``.

The agent resolves the recipe's choice once (:func:`resolve_profile`, detecting the visible
GPU for "auto") and hands the profile to the judge (``EvaluatorBase.set_hardware``); a judge
option naming a profile overrides it, resolved by the same function; a judge given none (on
its own, as ``geak-core eval`` builds it, or on a Ray node whose driver saw no GPU) detects
its own device with the same matcher."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from geak_core.api.components import HardwareProfile

if TYPE_CHECKING:
    from geak_core.engine.plugins import PluginManager


def match_profile(profiles: Iterable[HardwareProfile], name: str, arch: str) -> HardwareProfile | None:
    """The first profile whose patterns match the device ``name``, else the first that matches
    its ``arch`` (a device's marketing name is the surer guide: "NVIDIA H100 PCIe" must not
    take the SXM profile by its arch alone)."""
    profiles = [p for p in profiles if isinstance(p, HardwareProfile)]
    for value in (name, arch):
        for profile in profiles:
            if value and profile.matches(value):
                return profile
    return None


def resolve_profile(choice: str, plugins: PluginManager,
                    device: tuple[str, str] | None) -> HardwareProfile | None:
    """The profile named by ``choice``, or for "auto" (or "") the registered profile that
    matches ``device`` ((name, arch) of the GPU in use; None: no GPU, no profile), the
    profiles taken in the order of their names. A named profile that does not build raises
    the registry's error; in "auto", one that does not build is passed over."""
    if choice and choice != "auto":
        return plugins.build("hardware_profile", choice)
    if device is None:
        return None
    profiles = []
    for name in sorted(plugins.components("hardware_profile")):
        try:
            profiles.append(plugins.build("hardware_profile", name))
        except Exception:
            continue
    return match_profile(profiles, *device)


# The device files a GPU driver torch can use makes on Linux: NVIDIA's control device,
# ROCm's kernel fusion driver, WSL's paravirtual GPU.
GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def no_gpu_here() -> bool:
    """Whether this is a Linux machine without any GPU driver's device file, where torch can
    see no GPU: saying so then needs no import of torch (seconds on a small machine, which a
    CPU run's first verdict waited for). Elsewhere, False: ask torch."""
    return sys.platform.startswith("linux") and not any(os.path.exists(path) for path in GPU_DEVICE_FILES)


def visible_device() -> tuple[str, str] | None:
    """(name, arch) of this process's first GPU as torch sees it, or None (no GPU, no torch)."""
    if no_gpu_here():
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        properties = torch.cuda.get_device_properties(0)
        return torch.cuda.get_device_name(0), str(getattr(properties, "gcnArchName", "") or "")
    except Exception:
        return None


__all__ = ["match_profile", "no_gpu_here", "resolve_profile", "visible_device"]
