"""Where children run: worker slots pinned to one device each."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Slot:
    index: int
    env: dict[str, str | None]
    label: str


@dataclass
class Runtime:
    mode: str  # "interpreter" | "gpu"
    case_set: str  # "small" | "full"
    device_name: str
    vendor: str | None
    slots: list[Slot]
    probe: dict[str, Any] = field(default_factory=dict)
    isolate: bool = False  # children in their own namespaces


def gpu_visible() -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def visible_devices(vendor: str, count: int) -> list[str]:
    names = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if vendor == "amd" else ("CUDA_VISIBLE_DEVICES",)
    for name in names:
        value = os.environ.get(name)
        if value:
            listed = [v.strip() for v in value.split(",") if v.strip()]
            if listed:
                return listed[:count]
    return [str(i) for i in range(count)]
