"""What a profiler reports of one correct candidate, and the bottleneck read from it.

The judge decides and times; a profiler explains. A profile is the candidate's own correct
code run on one of its task's timed cases in the judge's sandbox, under a profiling tool
(Nsight Compute, Triton's proton, rocprofv3). It never changes a verdict or a speedup:
profiling perturbs timing, so its durations are for explaining only.

* ``ProfileLaunch``: how the judge starts the profiled child (the tool's command put before
  the child's own, variables, an in-child context manager for tools that live in Python).
* ``KernelCounters``: one kernel launch's counters, each None where the tool cannot say.
* ``diagnose``: one of ``BOUNDS`` from the counters, the case's FLOP and byte counts and the
  hardware profile's peaks, with the two or three numbers that say so (``Diagnosis``).
* ``ProfileRecord``: all of it for one candidate, as the run store and the export keep it;
  ``error`` says why a profile has no counters (never fatal).

Everything here is plain data and pure functions, so the prompts, the store, the report and
the export read one record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geak_core.api.components import HardwareProfile
    from geak_core.api.model import ShapeResult

MEMORY, COMPUTE, LATENCY, LAUNCH = "memory", "compute", "latency", "launch"
BOUNDS: tuple[str, ...] = (MEMORY, COMPUTE, LATENCY, LAUNCH)
BOUND_TEXT = {
    MEMORY: "memory-bound",
    COMPUTE: "compute-bound",
    LATENCY: "latency- or occupancy-bound",
    LAUNCH: "launch-bound",
}

# A unit (DRAM or compute) busy at this fraction of its peak or more bounds the kernel.
BUSY_FRACTION = 0.6
# A call whose kernels are busy for less than this fraction of its latency spends most of its
# time launching (host work, launch overhead, gaps between kernels).
LAUNCH_BUSY_FRACTION = 0.5
# Kernels this short are dominated by their launch whatever the call's latency.
LAUNCH_KERNEL_US = 3.0


@dataclass(frozen=True)
class ProfileLaunch:
    """How the judge starts a profiled child.

    ``wrapper``: the tool's command, put before the child's own (``("ncu", "--csv", ...)``;
    empty for a tool that lives in Python); ``{out}`` in it stands for the folder the tool
    writes to. ``env``: variables the profiled child gets (``{out}`` expanded likewise).
    ``in_child``: ``"module:function"`` of a context manager the child enters, with the
    output folder as its argument, around the profiled calls (proton); empty for none.
    ``region``: the child marks the profiled calls with ``cudaProfilerStart``/``Stop``
    (a tool started with profiling off records only those).
    """

    wrapper: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    in_child: str = ""
    region: bool = False

    def expanded(self, out: str) -> ProfileLaunch:
        return dataclasses.replace(
            self, wrapper=tuple(a.replace("{out}", out) for a in self.wrapper),
            env={k: v.replace("{out}", out) for k, v in self.env.items()})


@dataclass(frozen=True)
class KernelCounters:
    """One kernel launch, as a profiler saw it; each figure None where the tool cannot say.

    Percentages are of the device's peak (0-100); ``stalls`` are the top warp stall reasons
    with their share of stall samples in percent, largest first."""

    name: str
    duration_us: float | None = None
    dram_pct: float | None = None  # DRAM throughput, % of peak sustained
    dram_bytes: float | None = None  # bytes read from and written to DRAM
    sm_pct: float | None = None  # SM (compute units') throughput, % of peak
    tensor_pct: float | None = None  # tensor (matrix) pipes' throughput, % of peak
    flops: float | None = None
    occupancy_pct: float | None = None  # achieved occupancy, % of the maximum
    registers_per_thread: int | None = None
    spilled_bytes: int | None = None  # local-memory (spill) bytes per thread
    shared_bytes_per_block: int | None = None
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    stalls: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, ())}
        if self.stalls:
            data["stalls"] = [[name, share] for name, share in self.stalls]
        for key in ("grid", "block"):
            if key in data:
                data[key] = list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelCounters:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in ("grid", "block"):
            if values.get(key) is not None:
                values[key] = tuple(int(x) for x in values[key])
        values["stalls"] = tuple((str(n), float(s)) for n, s in values.get("stalls") or ())
        return cls(**values)


@dataclass(frozen=True)
class Diagnosis:
    """The bottleneck of a profiled candidate: ``bound`` (one of ``BOUNDS``), how close it
    runs to that bound's peak (``peak_fraction``, 0-1; None where no peak applies), and the
    two or three figures that say so (``evidence``, one short line each; ``numbers`` the
    same figures by name)."""

    bound: str
    peak_fraction: float | None
    evidence: tuple[str, ...]
    numbers: Mapping[str, float] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return BOUND_TEXT.get(self.bound, self.bound)

    def to_dict(self) -> dict[str, Any]:
        return {"bound": self.bound, "peak_fraction": self.peak_fraction,
                "evidence": list(self.evidence), "numbers": dict(self.numbers)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Diagnosis:
        fraction = data.get("peak_fraction")
        return cls(str(data["bound"]), None if fraction is None else float(fraction),
                   tuple(str(e) for e in data.get("evidence") or ()),
                   {str(k): float(v) for k, v in (data.get("numbers") or {}).items()})


@dataclass(frozen=True)
class ProfileRecord:
    """One profiled candidate: which profiler, on which case, the kernels of ``calls``
    profiled calls (launch order), the diagnosis, the seconds it cost, and ``error`` (why
    there are no counters: the tool missing or failing, the budget spent; never fatal)."""

    profiler: str
    candidate_id: str = ""
    case: str = ""
    kernels: tuple[KernelCounters, ...] = ()
    calls: int = 1
    diagnosis: Diagnosis | None = None
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.kernels)

    def to_dict(self) -> dict[str, Any]:
        return {"profiler": self.profiler, "candidate": self.candidate_id, "case": self.case,
                "kernels": [k.to_dict() for k in self.kernels], "calls": self.calls,
                "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
                "seconds": round(self.seconds, 3), "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileRecord:
        diagnosis = data.get("diagnosis")
        return cls(str(data.get("profiler", "")), str(data.get("candidate", "")), str(data.get("case", "")),
                   tuple(KernelCounters.from_dict(k) for k in data.get("kernels") or ()),
                   int(data.get("calls", 1) or 1), Diagnosis.from_dict(diagnosis) if diagnosis else None,
                   float(data.get("seconds", 0.0) or 0.0), data.get("error"))

    def with_diagnosis(self, diagnosis: Diagnosis | None) -> ProfileRecord:
        return dataclasses.replace(self, diagnosis=diagnosis)


def _weighted(kernels: Sequence[KernelCounters], figure: Callable[[KernelCounters], float | None]) -> float | None:
    """The duration-weighted mean of a percentage over the kernels that report it (a plain
    mean where durations are missing)."""
    pairs = [(value, k.duration_us) for k in kernels if (value := figure(k)) is not None]
    if not pairs:
        return None
    if all(d for _, d in pairs):
        total = sum(d for _, d in pairs)  # type: ignore[misc]
        return sum(v * d for v, d in pairs) / total  # type: ignore[operator]
    return sum(v for v, _ in pairs) / len(pairs)


def _sum(kernels: Sequence[KernelCounters], figure: Callable[[KernelCounters], float | None]) -> float | None:
    values = [figure(k) for k in kernels]
    if not values or any(v is None for v in values):
        return None
    return float(sum(values))


def _peak_tflops(hardware: HardwareProfile | None, dtype: str | None) -> float | None:
    if hardware is None:
        return None
    if dtype and hardware.peak_for(dtype):
        return hardware.peak_for(dtype)
    return hardware.peak_for("fp32")


def diagnose(kernels: Sequence[KernelCounters], *, calls: int = 1, hardware: HardwareProfile | None = None,
             case: ShapeResult | None = None, latency_us: float | None = None) -> Diagnosis | None:
    """The bottleneck of one call, from its kernels' counters (``calls`` calls' worth).

    Fractions of peak come from the tool's percentages where it gives them, else from bytes
    and FLOPs over the kernels' time against ``hardware``'s peaks (the bytes and FLOPs the
    tool counted, else the task's counts for ``case``). The rules, in order:

    1. **launch**: the kernels are busy for less than half of the call's latency
       (``latency_us``, the judge's measurement), or no kernel runs longer than 3 us;
    2. **memory** / **compute**: the busier of DRAM and the compute pipes (SM or tensor, the
       higher) reaches 60 % of its peak;
    3. **latency**: neither does (occupancy, stalls and dependencies hold it back).

    None when there is nothing to read (no kernel, or no duration and no percentage).
    """
    if not kernels:
        return None
    per_call = max(calls, 1)
    durations = [k.duration_us for k in kernels if k.duration_us is not None]
    kernel_us = sum(durations) / per_call if durations else None
    numbers: dict[str, float] = {"kernels_per_call": len(kernels) / per_call}
    if kernel_us is not None:
        numbers["kernel_us"] = round(kernel_us, 3)
    longest = max(durations) if durations else None

    dram = _weighted(kernels, lambda k: k.dram_pct)
    dram_fraction = dram / 100.0 if dram is not None else None
    seconds = kernel_us * 1e-6 * per_call if kernel_us else None
    moved = _sum(kernels, lambda k: k.dram_bytes)
    if moved is None and case is not None and case.bytes:
        moved = case.bytes * per_call
    if dram_fraction is None and moved and seconds and hardware is not None:
        dram_fraction = moved / seconds / (hardware.peak_bandwidth_gbs * 1e9)
    if moved and seconds:
        numbers["achieved_gbs"] = round(moved / seconds / 1e9, 1)
    compute = max((v for v in (_weighted(kernels, lambda k: k.sm_pct), _weighted(kernels, lambda k: k.tensor_pct)) if v is not None),
                  default=None)
    compute_fraction = compute / 100.0 if compute is not None else None
    flops = _sum(kernels, lambda k: k.flops)
    if flops is None and case is not None and case.flops:
        flops = case.flops * per_call
    peak = _peak_tflops(hardware, case.dtype if case is not None else None)
    if compute_fraction is None and flops and seconds and peak:
        compute_fraction = flops / seconds / (peak * 1e12)
    if flops and seconds:
        numbers["achieved_tflops"] = round(flops / seconds / 1e12, 2)
    if dram_fraction is not None:
        numbers["dram_fraction"] = round(dram_fraction, 4)
    if compute_fraction is not None:
        numbers["compute_fraction"] = round(compute_fraction, 4)
    occupancy = _weighted(kernels, lambda k: k.occupancy_pct)
    if occupancy is not None:
        numbers["occupancy_pct"] = round(occupancy, 1)
    if kernel_us is None and dram_fraction is None and compute_fraction is None:
        return None

    busy = None
    if kernel_us is not None and latency_us:
        busy = min(kernel_us / latency_us, 1.0)
        numbers["busy_fraction"] = round(busy, 4)
    if (busy is not None and busy < LAUNCH_BUSY_FRACTION) or (longest is not None and longest < LAUNCH_KERNEL_US):
        evidence = []
        if busy is not None:
            evidence.append(f"kernels busy {kernel_us:.1f} of {latency_us:.1f} us per call ({busy:.0%})")
        evidence.append(f"{numbers['kernels_per_call']:g} kernel launch(es) per call, the longest {longest:.1f} us")
        return Diagnosis(LAUNCH, busy, tuple(evidence), numbers)

    def pct(fraction: float) -> str:
        return f"{fraction * 100:.1f} % of peak"

    top_stall = _top_stall(kernels)
    if dram_fraction is not None and dram_fraction >= BUSY_FRACTION and dram_fraction >= (compute_fraction or 0.0):
        evidence = [f"DRAM throughput {pct(dram_fraction)}"]
        if "achieved_gbs" in numbers:
            evidence.append(f"{numbers['achieved_gbs']:g} GB/s moved")
        if compute_fraction is not None:
            evidence.append(f"compute {pct(compute_fraction)}")
        return Diagnosis(MEMORY, dram_fraction, tuple(evidence), numbers)
    if compute_fraction is not None and compute_fraction >= BUSY_FRACTION:
        evidence = [f"compute throughput {pct(compute_fraction)}"]
        if "achieved_tflops" in numbers:
            evidence.append(f"{numbers['achieved_tflops']:g} TFLOP/s")
        if dram_fraction is not None:
            evidence.append(f"DRAM {pct(dram_fraction)}")
        return Diagnosis(COMPUTE, compute_fraction, tuple(evidence), numbers)
    evidence = []
    if dram_fraction is not None:
        evidence.append(f"DRAM {pct(dram_fraction)}")
    if compute_fraction is not None:
        evidence.append(f"compute {pct(compute_fraction)}")
    if occupancy is not None:
        evidence.append(f"achieved occupancy {occupancy:.0f} %")
    elif top_stall is not None:
        evidence.append(f"top stall: {top_stall[0]} ({top_stall[1]:.0f} %)")
    reached = max((f for f in (dram_fraction, compute_fraction) if f is not None), default=None)
    return Diagnosis(LATENCY, reached, tuple(evidence[:3]), numbers)


def _top_stall(kernels: Sequence[KernelCounters]) -> tuple[str, float] | None:
    stalls = [s for k in kernels for s in k.stalls]
    return max(stalls, key=lambda s: s[1]) if stalls else None


def counters_text(record: ProfileRecord, limit: int = 3) -> list[str]:
    """The kernels' main counters, one line per kernel (the longest ``limit`` kernels), as
    the prompts, ``runs log`` and the report show them."""
    kernels = sorted(record.kernels, key=lambda k: -(k.duration_us or 0.0))[:limit]
    lines = []
    for k in kernels:
        parts = []
        if k.duration_us is not None:
            parts.append(f"{k.duration_us:.1f} us")
        for label, value in (("DRAM", k.dram_pct), ("SM", k.sm_pct), ("tensor", k.tensor_pct),
                             ("occupancy", k.occupancy_pct)):
            if value is not None:
                parts.append(f"{label} {value:.0f} %")
        if k.registers_per_thread is not None:
            parts.append(f"{k.registers_per_thread} regs/thread")
        if k.spilled_bytes:
            parts.append(f"{k.spilled_bytes} B spilled")
        if k.shared_bytes_per_block is not None:
            parts.append(f"{k.shared_bytes_per_block} B shared/block")
        if k.grid:
            parts.append("grid " + "x".join(str(g) for g in k.grid))
        if k.block:
            parts.append("block " + "x".join(str(b) for b in k.block))
        if k.stalls:
            parts.append("stalls " + ", ".join(f"{n} {s:.0f} %" for n, s in k.stalls[:3]))
        lines.append(f"{k.name}: " + ", ".join(parts) if parts else k.name)
    return lines


def bound_line(diagnosis: Diagnosis) -> str:
    """The class in words with how close it runs to its limit, as one phrase: "memory-bound at
    82 % of peak", "launch-bound (kernels busy 30 % of the call)"."""
    fraction = diagnosis.peak_fraction
    if fraction is None:
        return diagnosis.text
    percent = f"{fraction * 100:.0f} %"
    if diagnosis.bound in (MEMORY, COMPUTE):
        return f"{diagnosis.text} at {percent} of peak"
    if diagnosis.bound == LAUNCH:
        return f"{diagnosis.text} (kernels busy {percent} of the call)"
    return f"{diagnosis.text} (the busier unit at {percent} of its peak)"


def profile_view(record: ProfileRecord) -> dict[str, Any]:
    """What a prompt template is given of a profile: ``profiler``, ``candidate``, ``case``,
    ``bound`` (one of ``BOUNDS``, None without a diagnosis), ``text`` (the class in words),
    ``line`` (``bound_line``), ``peak_fraction``, ``evidence`` and ``counters``
    (``counters_text``), each a list of lines."""
    diagnosis = record.diagnosis
    return {"profiler": record.profiler, "candidate": record.candidate_id, "case": record.case,
            "bound": diagnosis.bound if diagnosis else None, "text": diagnosis.text if diagnosis else None,
            "line": bound_line(diagnosis) if diagnosis else None,
            "peak_fraction": diagnosis.peak_fraction if diagnosis else None,
            "evidence": list(diagnosis.evidence) if diagnosis else [], "counters": counters_text(record)}
