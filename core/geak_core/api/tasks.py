"""Tasks: what a candidate must provide and how the judge exercises it.

A ``Task`` is plain, JSON-serialisable data. The code that builds inputs,
launches kernels and computes oracles lives in the task's *harness*, a class
named by ``Task.harness`` (``"package.module:Class"``) deriving from
``geak_core.api.harness.Harness``. The harness is imported only inside the
judge's child processes, never in the process that runs the agent.

What the model sees is ``Task.prompt_view()``: the instruction, the entry
points, the tolerances and the shapes. Never the reference or the oracle.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.errors import InputError, suggest

# KernelBench-X's 15 task categories: the folder names of its data/kernelbenchx/.
CATEGORIES: tuple[str, ...] = (
    "Activation",
    "Convolution",
    "Fusion",
    "Index",
    "LinearAlgebra",
    "Loss",
    "Math",
    "MatrixMultiply",
    "Normalization",
    "Optimizer",
    "Pooling",
    "Quantization",
    "Random",
    "Reduce",
    "SpatialOps",
)

# Default (atol, rtol) per dtype name. Integer and boolean outputs compare exactly.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (5e-3, 5e-3),
    "bfloat16": (1e-2, 1e-2),
    "float8_e4m3fn": (6.25e-2, 6.25e-2),
    "float8_e5m2": (1.25e-1, 1.25e-1),
    "float8_e4m3fnuz": (6.25e-2, 6.25e-2),
    "float8_e5m2fnuz": (1.25e-1, 1.25e-1),
}
EXACT = (0.0, 0.0)


def tolerance_for(dtype: str, overrides: dict[str, Any] | None = None) -> tuple[float, float]:
    """(atol, rtol) for an output of ``dtype``; overrides are ``{dtype: [atol, rtol]}``."""
    if overrides and dtype in overrides:
        atol, rtol = overrides[dtype]
        return float(atol), float(rtol)
    if overrides and "*" in overrides:
        atol, rtol = overrides["*"]
        return float(atol), float(rtol)
    return DEFAULT_TOLERANCES.get(dtype, EXACT)


ENTRY_KINDS = ("triton.jit", "function", "nn.Module")
MODULE_KIND = "nn.Module"


@dataclass(frozen=True)
class EntryPoint:
    """A name the candidate module must define.

    ``kind`` is ``"triton.jit"`` for a kernel the harness launches,
    ``"function"`` for a Python function (wrapper) the harness calls, or
    ``"nn.Module"`` for a ``torch.nn.Module`` subclass the harness constructs and
    calls (KernelBench's ``ModelNew``: ``params`` are its ``forward``'s).
    ``params`` lists parameter names in order; ``constexpr`` those that must be
    ``tl.constexpr``.
    """

    name: str
    kind: str = "triton.jit"
    params: tuple[str, ...] = ()
    constexpr: tuple[str, ...] = ()
    doc: str = ""

    def signature(self) -> str:
        parts = [f"{p}: tl.constexpr" if p in self.constexpr else p for p in self.params]
        if self.kind == MODULE_KIND:
            return f"class {self.name}(torch.nn.Module) with forward(self, {', '.join(parts)})"
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True)
class OutlierSpec:
    """Stage-2 inputs: ``fraction`` of the elements of each listed input scaled by ``scale``."""

    fraction: float = 1e-3
    scale: float = 50.0
    inputs: tuple[str, ...] | None = None  # None: every floating-point input tensor


@dataclass(frozen=True)
class Requirement:
    """A hardware need. ``check`` is evaluated by the judge on the current device."""

    name: str  # "gpu", "cc>=9.0", "fp8", "dot_scaled", "nvidia", "amd", ...
    reason: str = ""


@dataclass
class Task:
    suite: str
    id: str
    instruction: str
    entry_points: list[EntryPoint]
    harness: str  # "module:Class"
    reference: str = ""  # path to the reference implementation (a Python file)
    difficulty: int | None = None  # 1 (easy) .. 5 (hard)
    category: str | None = None  # one of CATEGORIES
    tolerances: dict[str, Any] = field(default_factory=dict)  # {dtype: [atol, rtol]}
    outliers: OutlierSpec | None = field(default_factory=OutlierSpec)  # None: no stage 2
    outlier_note: str = ""  # why stage 2 does not apply, when outliers is None
    seeds: tuple[int, ...] = (0, 1, 2)
    requires: list[Requirement] = field(default_factory=list)
    # Needs of some cases only, for listings (each Case declares its own; the judge reads those).
    case_requires: list[Requirement] = field(default_factory=list)
    forbid_torch_compute: bool = True  # entry points may not compute with torch
    shapes_note: str = ""  # shapes and dtypes as shown to the model
    # A module timed in place of the reference (the original expert kernels, say); the
    # reference still decides correctness. Empty: the reference is the timing baseline.
    timing_baseline: str = ""
    # The task's computation in PyTorch eager, timed for a speedup against it (never used for
    # correctness): "harness", the harness's ``eager`` method; "reference", the reference
    # itself is PyTorch eager (KernelBench-X); "": the task has none.
    eager: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # suite-specific, JSON-serialisable

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.id}"

    @property
    def level(self) -> int | None:
        """KernelBench's level (1, 2, 3): ``extra["level"]`` where the suite sets an int; summaries
        group tasks by it as by category."""
        level = self.extra.get("level")
        return level if isinstance(level, int) and not isinstance(level, bool) else None

    def prompt_view(self) -> dict[str, Any]:
        """What a prompt may show: never the reference or the oracle."""
        return {
            "id": self.id,
            "suite": self.suite,
            "instruction": self.instruction,
            "entry_points": [
                {"name": e.name, "kind": e.kind, "signature": e.signature(), "doc": e.doc}
                for e in self.entry_points
            ],
            "tolerances": {
                k: list(v) for k, v in (self.tolerances or {}).items()
            },
            "shapes": self.shapes_note,
            "difficulty": self.difficulty,
            "category": self.category,
            "requires": [r.name for r in self.requires],
            "case_requires": [r.name for r in self.case_requires],
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        data = dict(data)
        data["entry_points"] = [
            EntryPoint(
                name=e["name"],
                kind=e.get("kind", "triton.jit"),
                params=tuple(e.get("params", ())),
                constexpr=tuple(e.get("constexpr", ())),
                doc=e.get("doc", ""),
            )
            for e in data.get("entry_points", [])
        ]
        if data.get("outliers") is not None:
            o = data["outliers"]
            data["outliers"] = OutlierSpec(
                fraction=o["fraction"],
                scale=o["scale"],
                inputs=tuple(o["inputs"]) if o.get("inputs") is not None else None,
            )
        data["requires"] = [Requirement(**r) for r in data.get("requires", [])]
        data["case_requires"] = [Requirement(**r) for r in data.get("case_requires", [])]
        data["seeds"] = tuple(data.get("seeds", (0, 1, 2)))
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def lookup_task(
    suite: str, tasks: Mapping[str, Task], task_id: str, unusable: Mapping[str, str] | None = None
) -> Task:
    """``tasks[task_id]`` for a suite's ``get``, or an ``InputError`` that says why not.

    ``unusable`` maps the ids of tasks the suite found but could not load to the
    reason; such an id is reported with its reason, any other with a "did you mean".
    """
    if task_id in tasks:
        return tasks[task_id]
    if unusable and task_id in unusable:
        raise InputError(f"{suite} task {task_id!r} is unusable: {unusable[task_id]}")
    raise InputError(f"suite {suite!r} has no task {task_id!r} ({suggest(task_id, tasks)})")


@dataclass
class Case:
    """One configuration a harness runs: a shape, a dtype, flags.

    ``params`` is JSON-serialisable and fully determines the inputs together
    with the seed. ``flops`` / ``bytes`` feed the roofline figures; ``dtype``
    names the dtype whose peak applies. ``timed`` marks cases used for speed.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    flops: float | None = None
    bytes: float | None = None
    dtype: str | None = None
    timed: bool = True
    tolerances: dict[str, Any] = field(default_factory=dict)  # per-output-dtype overrides
    requires: list[Requirement] = field(default_factory=list)
    outliers: bool = True  # False: stage 2 skipped for this case (say why in note)
    checked: bool = True  # False: a timing-only case, never compared in the correctness stages
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Case:
        data = dict(data)
        data["requires"] = [Requirement(**r) for r in data.get("requires", [])]
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# ---------------------------------------------------------------------------
# Hardware requirements
# ---------------------------------------------------------------------------
# Vocabulary of Requirement.name:
#   "gpu"          a real GPU (not the CPU interpreter)
#   "interpreter"  only under the CPU interpreter
#   "cuda" / "hip" that backend ("nvidia" / "amd" are aliases)
#   "bf16"         bfloat16 kernels (NVIDIA cc>=8.0 or AMD; not the interpreter)
#   "tma"          the tensor memory accelerator (NVIDIA cc>=9.0)
#   "cc>=X.Y"      CUDA compute capability (HIP devices report e.g. 9.4 for gfx942)
#   "fp8"          a native fp8 type for tl.dot (NVIDIA cc>=8.9, AMD gfx94x/gfx95x)
#   "dot_scaled"   tl.dot_scaled (MX formats): NVIDIA cc>=9.0 or AMD gfx950
#   "clusters"     thread-block clusters / num_ctas > 1 (NVIDIA cc>=9.0)
#   "block_ptr"    tl.make_block_ptr / tl.advance (Triton before 3.9, which removed them)


@dataclass(frozen=True)
class DeviceInfo:
    """What the judge runs on, as far as requirements care."""

    kind: str  # "interpreter" | "cuda" | "hip"
    name: str = "cpu-interpreter"
    capability: tuple[int, int] | None = None
    arch: str = ""  # "sm_90", "gfx942", ...
    triton: tuple[int, int] | None = None  # (major, minor) of the installed Triton

    @classmethod
    def detect(cls) -> DeviceInfo:
        """Probe the current process (imports torch; call it in a child or a tool)."""
        import os

        import torch

        version = triton_version()
        if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
            return cls("interpreter", triton=version)
        props = torch.cuda.get_device_properties(0)
        capability = (props.major, props.minor)
        if torch.version.hip is not None:
            arch = getattr(props, "gcnArchName", "").split(":")[0]
            return cls("hip", props.name, capability, arch, version)
        return cls("cuda", props.name, capability, f"sm_{props.major}{props.minor}", version)


def triton_version() -> tuple[int, int] | None:
    """(major, minor) of the installed Triton, None when it is absent or unreadable."""
    try:
        import triton
    except ImportError:
        return None
    parts = re.match(r"(\d+)\.(\d+)", getattr(triton, "__version__", ""))
    return (int(parts.group(1)), int(parts.group(2))) if parts else None


def unmet_requirement(requirement: Requirement, device: DeviceInfo) -> str | None:
    """``None`` when ``device`` satisfies ``requirement``, else the reason it does not."""
    name = requirement.name
    why = f" ({requirement.reason})" if requirement.reason else ""
    gpu = device.kind in ("cuda", "hip")
    cc = device.capability or (0, 0)
    if name == "gpu":
        ok = gpu
    elif name == "interpreter":
        ok = device.kind == "interpreter"
    elif name in ("cuda", "hip", "nvidia", "amd"):
        ok = device.kind == {"nvidia": "cuda", "amd": "hip"}.get(name, name)
    elif name == "bf16":
        ok = device.kind == "hip" or (device.kind == "cuda" and cc >= (8, 0))
    elif name == "tma":
        ok = device.kind == "cuda" and cc >= (9, 0)
    elif name.startswith("cc>="):
        major, _, minor = name[4:].partition(".")
        ok = gpu and cc >= (int(major), int(minor or 0))
    elif name == "fp8":
        ok = (device.kind == "cuda" and cc >= (8, 9)) or (
            device.kind == "hip" and device.arch.startswith(("gfx94", "gfx95"))
        )
    elif name == "dot_scaled":
        ok = (device.kind == "cuda" and cc >= (9, 0)) or (
            device.kind == "hip" and device.arch.startswith("gfx95")
        )
    elif name == "clusters":
        ok = device.kind == "cuda" and cc >= (9, 0)
    elif name == "block_ptr":
        if device.triton is not None and device.triton >= (3, 9):
            return f"needs block_ptr but Triton {device.triton[0]}.{device.triton[1]} removed tl.make_block_ptr{why}"
        ok = True
    else:
        return f"unknown requirement {name!r}{why}"
    if ok:
        return None
    return f"needs {name} but runs on {device.name}{why}"
