"""Hook implementations of geak_hw_nvidia_hopper: the H100 and H200 hardware profiles."""

from __future__ import annotations

from typing import Any

from geak_core import hookimpl

from geak_hw_nvidia_hopper.profiles import PROFILES


def _factory(profile: Any) -> Any:
    return lambda options=None: profile


@hookimpl
def geak_register_hardware_profiles(register):  # type: ignore[no-untyped-def]
    for profile in PROFILES:
        register(profile.name, _factory(profile), description=profile.marketing_name)
