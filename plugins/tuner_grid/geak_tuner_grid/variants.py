"""Variants of a candidate: its knobs set to other values, within a device's limits.

``generate_variants`` enumerates the neighbourhood of the candidate's own configuration
(each knob a few steps from its current value), drops what a cheap model says cannot fit
or cannot pay (``Limits``), ranks the rest nearest first and keeps ``budget`` of them. Each
variant's source is the candidate's with only the knobs' literals rewritten.

The cheap model, per kernel (and per ``triton.Config`` of an autotuned one):

* ``num_warps * warp_size <= max_threads``;
* block sizes are powers of two, and at least 16 along each ``tl.dot`` dimension;
* a kernel calling ``tl.dot`` whose block knobs name M, N and K (``BLOCK_M``,
  ``BLOCK_SIZE_K``, ``BN``, ...): the pipelined operand tiles,
  ``(M*K + K*N) * dtype_bytes * max(num_stages, 1)``, fit the shared memory, and the fp32
  accumulator, ``M*N / threads`` values per thread, fits ``max_registers_per_thread``;
* any other kernel: each block's elements per thread fit ``max_registers_per_thread``, and
  no block is smaller than the threads that share it.

Where a launch sets no ``num_warps`` / ``num_stages``, Triton's defaults are assumed (4;
3 on CUDA, 2 on HIP). The model prunes; it does not time: survivors still need the judge.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from geak_core.api.astutil import dotted_name, parse_source

from geak_tuner_grid.knobs import Knob, Span, find_knobs

if TYPE_CHECKING:
    from geak_core.api.components import HardwareProfile

_DIMENSION = re.compile(r"(?:BLOCK|TILE|B)_?(?:SIZE_?)?([MNK])$", re.IGNORECASE)
MAX_ENUMERATED = 200_000  # assignments enumerated before the neighbourhood is narrowed


@dataclass(frozen=True)
class Limits:
    """What the cheap model checks a configuration against."""

    warp_size: int = 32
    shared_memory_bytes: int = 228 * 1024
    max_threads: int = 1024
    max_registers_per_thread: int = 255
    hip: bool = False

    @classmethod
    def from_profile(cls, profile: HardwareProfile) -> Limits:
        """The limits of ``profile``'s device. Threads per block are 1024 on every supported
        GPU; the register bound is the ISA's per-thread ceiling (255 on NVIDIA, 512 VGPRs
        and AGPRs together on CDNA), which the profiles do not carry."""
        hip = profile.vendor == "amd"
        return cls(warp_size=profile.warp_size, shared_memory_bytes=profile.shared_memory_kib * 1024,
                   max_threads=1024, max_registers_per_thread=512 if hip else 255, hip=hip)


@dataclass(frozen=True)
class Variant:
    """One assignment of knob values, and the candidate's source rewritten with it."""

    changes: tuple[tuple[Knob, int], ...]  # (knob, new value), only the knobs that changed
    source: str
    distance: int  # steps from the candidate's own configuration, summed over knobs
    shared_memory_bytes: int  # the cheap model's estimate, 0 where no tl.dot is modelled

    def describe(self) -> str:
        """One line: ``add_kernel.BLOCK_SIZE 256->512, num_warps 4->8``."""
        return ", ".join(f"{k.kernel}.{k.name} {k.value}->{v}" for k, v in self.changes)


@dataclass
class Generation:
    """What ``generate_variants`` did: the knobs it tuned, how many assignments it
    considered, how many the cheap model pruned and why, and the ranked variants kept."""

    knobs: list[Knob]
    considered: int = 0
    pruned: dict[str, int] = field(default_factory=dict)
    over_budget: int = 0
    variants: list[Variant] = field(default_factory=list)


def domain(knob: Knob, limits: Limits) -> list[int]:
    """The values ``knob`` may take, ascending, its current value included."""
    if knob.kind == "block":
        values = [v for v in (*(knob.value >> k for k in (1, 2, 3)), *(knob.value << k for k in (1, 2, 3)))
                  if 1 <= v <= 2**16 and v & (v - 1) == 0]
    elif knob.kind == "warps":
        values = [w for w in (1, 2, 4, 8, 16, 32) if w * limits.warp_size <= limits.max_threads]
    elif knob.kind == "stages":
        values = [1, 2, 3, 4] if limits.hip else [1, 2, 3, 4, 5]
    elif knob.kind == "waves_per_eu":
        values = [0, 1, 2, 3, 4]
    elif knob.kind == "matrix_instr_nonkdim":
        values = [0, 16, 32]
    elif knob.kind == "kpack":
        values = [1, 2]
    else:
        values = []
    return sorted({*values, knob.value})


def rewrite(code: str, assignment: Iterable[tuple[Knob, int]]) -> str:
    """``code`` with each knob's literal (and the grid's literals tied to it) replaced by its
    new value; nothing else changes."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    edits = sorted(((offset(span.line, span.col), offset(span.end_line, span.end_col), str(v))
                    for k, v in assignment for span in (k.span, *k.tied)), reverse=True)
    for start, end, text in edits:
        code = code[:start] + text + code[end:]
    return code


def _dot_kernels(code: str) -> set[str]:
    tree = parse_source(code)
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            and any(isinstance(c, ast.Call) and dotted_name(c.func).split(".")[-1] == "dot"
                    for c in ast.walk(node))}


def _check(values: dict[Span, int], knobs: list[Knob], dots: set[str], limits: Limits,
           dtype_bytes: int) -> tuple[str | None, int]:
    """Why the configuration fails the cheap model (None: it passes), and its shared-memory
    estimate."""
    groups: dict[tuple[str, int | None], dict[str, int]] = {}
    for knob in knobs:
        group = groups.setdefault((knob.kernel, knob.config), {})
        group[knob.name] = max(group.get(knob.name, 0), values[knob.span])
    shared = 0
    for (kernel, _), group in groups.items():
        warps = group.get("num_warps", 4)
        stages = group.get("num_stages", 2 if limits.hip else 3)
        threads = warps * limits.warp_size
        if threads > limits.max_threads:
            return "threads", 0
        blocks = {name: value for name, value in group.items()
                  if any(k.name == name and k.kind == "block" for k in knobs)}
        if kernel in dots:
            dims: dict[str, int] = {}
            for name, value in blocks.items():
                found = _DIMENSION.search(name)
                if found:
                    dims[found.group(1).upper()] = value
            if any(v < 16 for v in dims.values()):
                return "dot dimension below 16", 0
            if {"M", "N", "K"} <= set(dims):
                m, n, k = dims["M"], dims["N"], dims["K"]
                need = (m * k + k * n) * dtype_bytes * max(stages, 1)
                if need > limits.shared_memory_bytes:
                    return "shared memory", 0
                if m * n / threads > limits.max_registers_per_thread:
                    return "registers", 0
                shared = max(shared, need)
        else:
            for value in blocks.values():
                if value / threads > limits.max_registers_per_thread:
                    return "registers", 0
                if value < threads:
                    return "idle threads", 0
    return None, shared


def generate_variants(code: str, limits: Limits, *, budget: int = 16, dtype_bytes: int = 2,
                      knobs: list[Knob] | None = None) -> Generation:
    """The ``budget`` variants of ``code`` nearest its own configuration that pass the cheap
    model, nearest first (ties: in enumeration order, smaller values first). HIP-only knobs
    are tuned only when ``limits.hip``; ``dtype_bytes`` is the element size of ``tl.dot``
    operands. The candidate's own configuration is never among the variants."""
    found = knobs if knobs is not None else find_knobs(code)
    tuned = [k for k in found if limits.hip or not k.hip_only]
    result = Generation(knobs=tuned)
    if not tuned:
        return result
    domains = [domain(k, limits) for k in tuned]
    current = [d.index(k.value) for k, d in zip(tuned, domains, strict=True)]
    reach = 3
    while reach > 1 and math.prod(min(len(d), 2 * reach + 1) for d in domains) > MAX_ENUMERATED:
        reach -= 1
    choices = [[i for i in range(len(d)) if abs(i - c) <= reach] for d, c in zip(domains, current, strict=True)]
    dots = _dot_kernels(code)
    survivors: list[tuple[int, tuple[int, ...], int]] = []
    for indices in itertools.product(*choices):
        if list(indices) == current:
            continue
        result.considered += 1
        values = {k.span: d[i] for k, d, i in zip(tuned, domains, indices, strict=True)}
        values.update({k.span: k.value for k in found if k not in tuned})
        reason, shared = _check(values, found, dots, limits, dtype_bytes)
        if reason is not None:
            result.pruned[reason] = result.pruned.get(reason, 0) + 1
            continue
        distance = sum(abs(i - c) for i, c in zip(indices, current, strict=True))
        survivors.append((distance, indices, shared))
    survivors.sort(key=lambda s: s[0])
    result.over_budget = max(0, len(survivors) - budget)
    for distance, indices, shared in survivors[:budget]:
        changes = tuple((k, d[i]) for k, d, i in zip(tuned, domains, indices, strict=True) if d[i] != k.value)
        result.variants.append(Variant(changes, rewrite(code, changes), distance, shared))
    return result
