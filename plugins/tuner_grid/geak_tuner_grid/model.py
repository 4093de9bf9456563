"""The cheap model of a launch configuration: is it legal on the device, and how fast is it
likely to be? It reads the source and the hardware profile only; it never runs anything,
and its estimate only orders what the judge times.

``assess(values, blocks, kernel, limits, dtype_bytes)`` takes one group of knobs (a
kernel's launch, or one ``triton.Config`` of it) and returns why the configuration is
illegal, or a score in (0, 1]: roughly the fraction of the device's peak the kernel reaches,
the product of the factors below. The problem's size is not in the source, so the model
assumes one of ``NOMINAL_ELEMENTS`` output elements whose loops walk ``NOMINAL_EXTENT``
elements. These assumptions and the constants below are a kernel engineer's rules of thumb,
not measurements: they rank configurations, and the judge's timings decide.

Legal (pruned otherwise, with the reason counted):

* ``num_warps * warp_size <= max_threads``;
* every block a power of two (the ladder has no other values) of at most
  ``MAX_TENSOR_NUMEL`` elements, at least 16 along each ``tl.dot`` dimension;
* a ``tl.dot`` kernel whose block knobs name M, N and K (``BLOCK_M``, ``BLOCK_SIZE_K``,
  ``BN``...): ``(M*K + K*N) * dtype_bytes * max(num_stages, 1)`` fits the shared memory, and
  the fp32 accumulator, ``M*N`` values over the threads, fits ``max_registers_per_thread``;
* on HIP, ``matrix_instr_nonkdim`` no larger than ``BLOCK_M`` and ``BLOCK_N``, and
  ``kpack = 2`` only with a ``BLOCK_K`` of 32 or more;
* any other kernel: each block's elements per thread fit ``max_registers_per_thread``, and
  the tile (the product of its blocks) is no smaller than the threads that share it.

Scored, for a kernel without ``tl.dot`` (memory-bound: its time is the bytes it moves):

* latency hiding (Little's law): the bytes a unit (SM or CU) has in flight, its resident
  programs times the tile's bytes, against its share of the bandwidth times
  ``DRAM_LATENCY_S``; programs resident are bounded by the unit's threads, registers and
  program slots, and by the programs the nominal problem has;
* issue: the warps a unit has in flight, against ``WARPS_PER_UNIT``;
* vector width: each thread's share of a load reaching 16 bytes;
* per-program cost: a fixed ``PROGRAM_OVERHEAD_BYTES`` against the tile's bytes;
* registers: an estimate of ``24 + 2 * elements per thread`` against the per-thread
  ceiling (spilling);
* spread: blocks that tile the problem (those no loop's range reads) leave
  ``STREAM_PROGRAMS_PER_UNIT`` programs a unit of the nominal problem, so that one
  configuration still fills the device for smaller shapes; a loop's step is no larger than
  the nominal loop;
* stages (a kernel with a loop only): a mild preference for 2-3.

Scored, for a ``tl.dot`` kernel (its dimensions ``DEFAULT_DOT_DIMS`` where not knobs):

* operand reuse: ``2*M*N / ((M+N) * dtype_bytes)`` flops per byte loaded, against the
  device's fp16 flops per byte of bandwidth (``L2_REUSE`` times HBM's: tiles come mostly
  from L2);
* ``BLOCK_K`` amortising each loop iteration, ``K / (K + 8)``;
* programs of the nominal problem enough to fill the units;
* warps: enough resident per unit, at least 16 accumulator values a thread, a 16x16 tile a
  warp, and on Hopper wgmma's (``num_warps`` a multiple of 4, ``BLOCK_M >= 64``);
* registers (accumulator and operand fragments) against the per-thread ceiling;
* stages (a kernel with a loop only): 3-4 on NVIDIA, 2 on HIP (where ``num_stages = 2``
  turns the stream pipeliner on);
* the AMD-only options' usual best values (``matrix_instr_nonkdim = 16``, ``kpack = 2``,
  ``waves_per_eu = 0``), slightly preferred.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from geak_core.api.astutil import dotted_name, parse_source

if TYPE_CHECKING:
    from geak_core.api.components import HardwareProfile

MAX_TENSOR_NUMEL = 2**20  # Triton's limit on a block's elements
NOMINAL_ELEMENTS = 2**20  # output elements of the problem the model assumes (a 1024x1024 gemm)
NOMINAL_EXTENT = 2**13  # elements a loop walks (a row of 8192)
DRAM_LATENCY_S = 700e-9
PROGRAM_OVERHEAD_BYTES = 1024  # a program's fixed cost (launch, index arithmetic), in bytes it could move
L2_REUSE = 3.0  # tiles of a gemm come mostly from L2: its bandwidth over HBM's
STREAM_PROGRAMS_PER_UNIT = 4  # programs a unit is given of the nominal problem (a smaller one still fills it)
WARPS_PER_UNIT = 16  # warps a unit wants in flight: four for each of its four schedulers (SIMDs)
ASSUMED_TILE = 1024  # elements of a tile whose blocks are not knobs
DEFAULT_DOT_DIMS = {"M": 64, "N": 64, "K": 32}  # dimensions assumed where a tl.dot kernel's are not knobs

_DIMENSION = re.compile(r"(?:BLOCK|TILE|B)_?(?:SIZE_?)?([MNK])$", re.IGNORECASE)
_STAGES_DOT = {False: {1: 0.6, 2: 0.85, 3: 1.0, 4: 1.0, 5: 0.97}, True: {1: 0.8, 2: 1.0, 3: 0.95, 4: 0.9}}
_STAGES_STREAM = {1: 0.95, 2: 1.0, 3: 1.0, 4: 0.98, 5: 0.96}
_HIP_PRIORS = {
    "matrix_instr_nonkdim": {16: 1.0, 0: 0.98, 32: 0.96},
    "kpack": {2: 1.0, 1: 0.98},
    "waves_per_eu": {0: 1.0, 2: 0.99, 1: 0.98, 3: 0.97, 4: 0.96},
}


@dataclass(frozen=True)
class Limits:
    """The device facts the model reads. The defaults are an H100 SXM's."""

    warp_size: int = 32
    shared_memory_bytes: int = 228 * 1024
    max_threads: int = 1024  # per program (block)
    max_registers_per_thread: int = 255
    hip: bool = False
    compute_units: int = 132
    bandwidth_bytes_per_s: float = 3350e9
    peak_flops: float = 989.4e12  # fp16 tl.dot
    threads_per_unit: int = 2048
    registers_per_unit: int = 65536
    programs_per_unit: int = 32
    wgmma: bool = True  # Hopper's warpgroup MMA (NVIDIA sm_90)

    @classmethod
    def from_profile(cls, profile: HardwareProfile) -> Limits:
        """The limits of ``profile``'s device. The profile gives the warp size, the shared
        memory, the units, the bandwidth and the fp16 peak (else fp32's, else an H100's); the
        ISA's ceilings it does not carry are the vendor's: 1024 threads a program; 255
        registers a thread on NVIDIA, 512 VGPRs and AGPRs together on CDNA; 2048 threads, 64K
        (NVIDIA) or 128K (CDNA) registers and 32 programs a unit."""
        hip = profile.vendor == "amd"
        return cls(warp_size=profile.warp_size, shared_memory_bytes=profile.shared_memory_kib * 1024,
                   max_threads=1024, max_registers_per_thread=512 if hip else 255, hip=hip,
                   compute_units=profile.compute_units,
                   bandwidth_bytes_per_s=profile.peak_bandwidth_gbs * 1e9,
                   peak_flops=(profile.peak_for("fp16") or profile.peak_for("fp32") or 0.0) * 1e12
                   or cls.peak_flops,
                   registers_per_unit=131072 if hip else 65536,
                   wgmma=profile.vendor == "nvidia" and profile.arch.startswith("sm_90"))


@dataclass(frozen=True)
class KernelFacts:
    """What the model needs to know of one ``@triton.jit`` kernel, read from its AST."""

    name: str
    dot: bool = False  # calls tl.dot
    loops: bool = False  # has a for or while loop in its body
    # names a loop's range or test reads, directly or through the kernel's assignments
    loop_names: frozenset[str] = field(default_factory=frozenset)


def kernel_facts(code: str) -> dict[str, KernelFacts]:
    """The facts of each ``@triton.jit`` kernel of ``code``, by name."""
    facts = {}
    for node in ast.walk(parse_source(code)):
        if not isinstance(node, ast.FunctionDef) or not any(
                dotted_name(d.func if isinstance(d, ast.Call) else d) in ("triton.jit", "jit")
                for d in node.decorator_list):
            continue
        body = [n for stmt in node.body for n in ast.walk(stmt)]
        loops = [n for n in body if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]
        names: set[str] = set()
        for loop in loops:
            bound = loop.test if isinstance(loop, ast.While) else loop.iter
            names.update(n.id for n in ast.walk(bound) if isinstance(n, ast.Name))
        assigned = [(target.id, {n.id for n in ast.walk(a.value) if isinstance(n, ast.Name)})
                    for a in body if isinstance(a, ast.Assign) for target in a.targets
                    if isinstance(target, ast.Name)]
        grown = True
        while grown:  # a bound computed from a block (n_blocks = tl.cdiv(n, BLOCK)) is the block's
            before = len(names)
            for target, used in assigned:
                if target in names:
                    names |= used
            grown = len(names) > before
        dot = any(isinstance(n, ast.Call) and dotted_name(n.func).split(".")[-1] == "dot" for n in body)
        facts[node.name] = KernelFacts(node.name, dot=dot, loops=bool(loops), loop_names=frozenset(names))
    return facts


def dimension(name: str) -> str | None:
    """``"M"``, ``"N"`` or ``"K"`` for a block named for a ``tl.dot`` dimension, else None."""
    found = _DIMENSION.search(name)
    return found.group(1).upper() if found else None


def _floor_power_of_two(value: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(value, 1)))))


def block_ladder(value: int, letter: str | None, limits: Limits, dtype_bytes: int) -> list[int]:
    """The powers of two a block may take: from 16 (or a smaller current value, outside a
    ``tl.dot`` dimension) up to the largest the device could hold with every other
    dimension at its least: for a ``tl.dot`` dimension (``letter`` M, N or K), its operand
    tiles at one stage in shared memory and its accumulator in registers; otherwise, one
    register a thread per element and Triton's element limit. The current value is always
    included."""
    low = 16 if letter else max(1, min(value, 16))
    room = limits.max_threads * limits.max_registers_per_thread
    elements = limits.shared_memory_bytes // dtype_bytes
    if letter == "K":
        high = elements // 32  # 16 x K and K x 16
    elif letter:
        high = min(room // 16, (elements - 16 * 16) // 16)  # P x 16 and 16 x 16, a P x 16 accumulator
    else:
        high = min(room, MAX_TENSOR_NUMEL)
    high = _floor_power_of_two(high)
    ladder = []
    rung = _floor_power_of_two(low)
    while rung <= high:
        if rung >= low:
            ladder.append(rung)
        rung *= 2
    return sorted({*ladder, value})


@dataclass(frozen=True)
class Assessment:
    """The model's word on one group's configuration: why it is illegal (None: it is legal),
    its score in (0, 1] (0 when illegal), and the shared memory its ``tl.dot`` tiles need."""

    reason: str | None
    score: float = 0.0
    shared_memory_bytes: int = 0


def assess(values: dict[str, int], blocks: set[str], kernel: KernelFacts, limits: Limits,
           dtype_bytes: int) -> Assessment:
    """The model's word on a group: ``values`` by knob name (every knob of the group), of
    which ``blocks`` are block sizes, for ``kernel`` on the device of ``limits``."""
    warps = values.get("num_warps", 4)
    stages = values.get("num_stages", 2 if limits.hip else 3)
    threads = warps * limits.warp_size
    if threads > limits.max_threads:
        return Assessment("threads")
    sizes = {name: values[name] for name in blocks}
    if any(v > MAX_TENSOR_NUMEL for v in sizes.values()):
        return Assessment("block over Triton's element limit")
    if kernel.dot:
        return _assess_dot(values, sizes, kernel, limits, dtype_bytes, warps, stages, threads)
    return _assess_stream(values, sizes, kernel, limits, dtype_bytes, warps, stages, threads)


def _hip_priors(values: dict[str, int], names: tuple[str, ...]) -> float:
    score = 1.0
    for name in names:
        if name in values:
            score *= _HIP_PRIORS[name].get(values[name], 0.9)
    return score


def _assess_dot(values: dict[str, int], sizes: dict[str, int], kernel: KernelFacts, limits: Limits,
                dtype_bytes: int, warps: int, stages: int, threads: int) -> Assessment:
    dims = {}
    for name, value in sizes.items():
        letter = dimension(name)
        if letter:
            dims[letter] = value
    if any(v < 16 for v in dims.values()):
        return Assessment("dot dimension below 16")
    for name, value in sizes.items():
        if name not in dims and value / threads > limits.max_registers_per_thread:
            return Assessment("registers")
    m, n, k = (dims.get(d, DEFAULT_DOT_DIMS[d]) for d in "MNK")
    if values.get("matrix_instr_nonkdim", 0) > min(m, n):
        return Assessment("MFMA instruction larger than the tile")
    if values.get("kpack", 1) > 1 and k < 32:
        return Assessment("kpack wider than BLOCK_K")
    shared = (m * k + k * n) * dtype_bytes * max(stages, 1)
    if {"M", "N", "K"} <= set(dims):
        if shared > limits.shared_memory_bytes:
            return Assessment("shared memory")
        if m * n / threads > limits.max_registers_per_thread:
            return Assessment("registers")
    accumulator = m * n / threads
    registers = 32 + accumulator + (m * k + k * n) * dtype_bytes / 4 / threads
    balance = limits.peak_flops / limits.bandwidth_bytes_per_s / L2_REUSE
    reuse = min(1.0, 2 * m * n / ((m + n) * dtype_bytes) / balance)
    step = k / (k + 8) * min(1.0, NOMINAL_EXTENT / k)
    spread = min(1.0, NOMINAL_ELEMENTS / (m * n) / limits.compute_units)
    resident = max(1, min(limits.threads_per_unit // threads, limits.programs_per_unit,
                          limits.shared_memory_bytes // max(shared, 1)))
    occupancy = min(1.0, 0.5 + 0.5 * resident * warps / 8)
    mma = 1.0 if limits.hip or not limits.wgmma or (warps % 4 == 0 and m >= 64) else 0.6
    if m * n / warps < 256:
        mma *= 0.5  # warps without a 16x16 tile of their own
    mma *= min(1.0, accumulator / 16) ** 0.5  # too many threads for the tile: too little work each
    spill = min(1.0, limits.max_registers_per_thread / registers)
    staged = _STAGES_DOT[limits.hip].get(stages, 0.9) if kernel.loops else 1.0
    score = (reuse * step * spread * occupancy * mma * spill * staged
             * _hip_priors(values, ("matrix_instr_nonkdim", "kpack", "waves_per_eu")))
    return Assessment(None, score, shared if {"M", "N", "K"} <= set(dims) else 0)


def _assess_stream(values: dict[str, int], sizes: dict[str, int], kernel: KernelFacts, limits: Limits,
                   dtype_bytes: int, warps: int, stages: int, threads: int) -> Assessment:
    for value in sizes.values():
        if value / threads > limits.max_registers_per_thread:
            return Assessment("registers")
    tile = math.prod(sizes.values()) if sizes else ASSUMED_TILE
    if tile < threads:
        return Assessment("idle threads")
    per_thread = tile / threads
    registers = 24 + 2 * per_thread
    held = threads * min(registers, limits.max_registers_per_thread)
    resident = max(1, min(limits.threads_per_unit // threads, limits.programs_per_unit,
                          int(limits.registers_per_unit // held)))
    tile_bytes = tile * dtype_bytes
    need = limits.bandwidth_bytes_per_s / limits.compute_units * DRAM_LATENCY_S
    vector = 0.5 + 0.5 * min(1.0, per_thread * dtype_bytes / 16)
    overhead = tile_bytes / (tile_bytes + PROGRAM_OVERHEAD_BYTES)
    spill = min(1.0, limits.max_registers_per_thread / registers)
    program = [v for name, v in sizes.items() if name not in kernel.loop_names]
    stepped = [v for name, v in sizes.items() if name in kernel.loop_names]
    available = NOMINAL_ELEMENTS / math.prod(program) / limits.compute_units if program else math.inf
    spread = min(1.0, available / STREAM_PROGRAMS_PER_UNIT)
    concurrent = min(resident, available)
    latency = min(1.0, concurrent * tile_bytes / need)
    issue = min(1.0, 0.5 + 0.5 * concurrent * warps / WARPS_PER_UNIT)
    waste = min(1.0, NOMINAL_EXTENT / math.prod(stepped)) if stepped else 1.0
    staged = 1.0
    if kernel.loops:
        staged = _STAGES_STREAM.get(stages, 0.9)
        if tile_bytes * max(stages - 1, 0) > limits.shared_memory_bytes:
            staged *= 0.5  # prefetched tiles would not fit the shared memory
    score = (latency * issue * vector * overhead * spill * spread * waste * staged
             * _hip_priors(values, ("waves_per_eu",)))
    return Assessment(None, score)
