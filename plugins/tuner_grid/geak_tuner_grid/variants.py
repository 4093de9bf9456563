"""Variants of a candidate: its knobs set to other values the device allows, in the order a
coarse-to-fine search judges them.

The knobs (``geak_tuner_grid.knobs``) fall in groups: a kernel's launch, or one
``triton.Config`` of its autotune list. Each knob's values (``domain``) are a power-of-two
ladder over the whole legal range (block sizes from 16 to what the device's registers,
shared memory and Triton's element limit allow; warps from 1 to ``max_threads``; stages 1-5,
1-4 on HIP), not a neighbourhood of its value. What is varied:

* block sizes and ``num_warps``, always;
* ``num_stages`` only for a kernel with a loop in its body (a loop-free kernel has nothing
  to pipeline);
* the AMD-only options only for a HIP target, and ``matrix_instr_nonkdim`` and ``kpack``
  only for a kernel calling ``tl.dot`` (they choose its MFMA instructions).

``Search`` enumerates each group's block sizes, warps and stages, drops what the cheap model
(``geak_tuner_grid.model``) says is illegal, and ranks the rest by the model's estimate. Then:

1. **coarse**: the best-ranked configurations whose tiles differ from each other (their
   block sizes by at least one ladder step where the launch has one block size, two where
   it has more; its warps where it has none), each with the warps and stages the model
   ranks best for it: one pick per region of the space, so that one wrong guess of the
   model costs one variant. Half the budget, at most ``COARSE_MAX``; the AMD-only options
   keep the candidate's values here. Past those, the other legal configurations follow in
   the model's order;
2. **refine**: the neighbours of the best configuration so far (one ladder step of one knob,
   the AMD-only options included, or of two of its block sizes and warps together), the
   model's best first; the tuner re-centres on the fastest variant the judge has timed after
   each batch, ``generate_variants`` (no judge) on the model's best. A centre with no
   neighbour left gives way to the next best (best-first); with none left anywhere, the
   coarse order goes on.

Several groups are varied together. Launches score as the product of their scores, and the
i-th coarse variant gives each its i-th pick. The configs of one autotune list score as
the best of them (its autotuner runs the fastest), and the i-th coarse variant gives its C
configs the picks i*C to i*C + C - 1: each variant offers the autotuner C different
regions. Each variant's source is the candidate's with only the knobs' literals rewritten.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from geak_tuner_grid.knobs import HIP_ONLY, Knob, find_knobs
from geak_tuner_grid.model import (
    Assessment,
    KernelFacts,
    Limits,
    assess,
    block_ladder,
    dimension,
    kernel_facts,
)

__all__ = ["COARSE_MAX", "Generation", "Limits", "Point", "Search", "Variant", "coarse_count", "domain",
           "generate_variants", "rewrite"]

COARSE_MAX = 8  # coarse variants at most, whatever the budget
COARSE_SPACING = 2  # ladder steps of the block sizes, summed, between two coarse picks (of two or more)
MAX_ENUMERATED = 50_000  # configurations of one group enumerated before its block ladders are thinned
_MAJOR = ("block", "warps")
_MFMA = ("matrix_instr_nonkdim", "kpack")

Point = tuple[int, ...]  # the value of each varied knob, in ``Search.knobs`` order


@dataclass(frozen=True)
class Variant:
    """One assignment of knob values, and the candidate's source rewritten with it."""

    changes: tuple[tuple[Knob, int], ...]  # (knob, new value), only the knobs that changed
    source: str
    distance: int  # ladder steps from the candidate's own configuration, summed over knobs
    shared_memory_bytes: int  # the cheap model's estimate, 0 where no tl.dot is modelled
    score: float = 0.0  # the cheap model's estimate, in (0, 1]: higher is likely faster
    phase: str = "coarse"  # "coarse" or "refine"
    point: Point = ()  # every varied knob's value, in ``Search.knobs`` order

    def describe(self) -> str:
        """One line: ``add_kernel.BLOCK_SIZE 256->512, num_warps 4->8``."""
        return ", ".join(f"{k.kernel}.{k.name} {k.value}->{v}" for k, v in self.changes)


@dataclass
class Generation:
    """What ``generate_variants`` did: the knobs it varies, how many configurations it
    considered, how many the cheap model pruned and why, how many legal ones the budget left
    out, and the variants kept, in the search's order."""

    knobs: list[Knob]
    considered: int = 0
    pruned: dict[str, int] = field(default_factory=dict)
    over_budget: int = 0
    variants: list[Variant] = field(default_factory=list)


def domain(knob: Knob, limits: Limits, kernel: KernelFacts | None = None, dtype_bytes: int = 2) -> list[int]:
    """The values ``knob`` may take, ascending, its current value included."""
    if knob.kind == "block":
        letter = dimension(knob.name) if kernel is not None and kernel.dot else None
        return block_ladder(knob.value, letter, limits, dtype_bytes)
    if knob.kind == "warps":
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
    new value, and each implicit knob's option written where its launch leaves it out;
    nothing else changes."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    edits = sorted(((offset(span.line, span.col), offset(span.end_line, span.end_col),
                     k.insert.format(v) if k.insert and span == k.span else str(v))
                    for k, v in assignment for span in (k.span, *k.tied)), reverse=True)
    for start, end, text in edits:
        code = code[:start] + text + code[end:]
    return code


@dataclass
class _Group:
    """The knobs of one launch or one ``triton.Config``: all of them, and the positions (in
    ``Search.knobs``) of those varied."""

    kernel: KernelFacts
    knobs: list[Knob]
    varied: list[int]
    config: int = 0  # its place in its kernel's autotune list (0 for a launch)
    configs: int = 1  # the configs of that list (1 for a launch): the i-th coarse variant
    # gives config c the pick i * configs + c
    picks: list[tuple[int, ...]] = field(default_factory=list)  # coarse picks: values of ``varied``
    legal: int = 0  # configurations of it the model kept


def _groups(found: list[Knob]) -> list[tuple[str, list[Knob]]]:
    """Knobs by launch or config: by kernel and config, and within those, a name's i-th
    occurrence with the other names' i-th (two launches of one kernel are two groups)."""
    by_site: dict[tuple[str, int | None], list[list[Knob]]] = {}
    for knob in found:
        groups = by_site.setdefault((knob.kernel, knob.config), [])
        position = next((i for i, g in enumerate(groups) if all(k.name != knob.name for k in g)), None)
        if position is None:
            groups.append([knob])
        else:
            groups[position].append(knob)
    return [(kernel, group) for (kernel, _), groups in by_site.items() for group in groups]


class Search:
    """The variants of ``code`` the device allows, coarse to fine (see the module's text).

    ``coarse_batch`` and ``refine_batch`` give the next variants not yet ``seen``;
    ``plan(budget)`` is the order without a judge. ``considered`` and ``pruned`` count the
    configurations the model was asked about and why it refused some; ``legal`` how many it
    kept (over all groups: the product of each group's)."""

    def __init__(self, code: str, limits: Limits, *, dtype_bytes: int = 2,
                 knobs: list[Knob] | None = None) -> None:
        self.code, self.limits, self.dtype_bytes = code, limits, dtype_bytes
        found = knobs if knobs is not None else find_knobs(code, implicit=True, hip=limits.hip)
        facts = kernel_facts(code) if found else {}
        self.knobs: list[Knob] = []
        self.domains: list[list[int]] = []
        self.groups: list[_Group] = []
        self.considered = 0
        self.pruned: dict[str, int] = {}
        self._memo: dict[tuple[int, tuple[int, ...]], Assessment] = {}
        self._neighbours: dict[Point, list[Point]] = {}
        for kernel_name, members in _groups(found):
            kernel = facts.get(kernel_name, KernelFacts(kernel_name))
            group = _Group(kernel, members, [])
            for knob in members:
                if self._varies(knob, kernel):
                    group.varied.append(len(self.knobs))
                    self.knobs.append(knob)
                    self.domains.append(domain(knob, limits, kernel, dtype_bytes))
            self.groups.append(group)
        lists: dict[str, list[_Group]] = {}
        for group in self.groups:
            if group.knobs[0].config is not None:
                lists.setdefault(group.kernel.name, []).append(group)
        for configs in lists.values():
            for place, group in enumerate(configs):
                group.config, group.configs = place, len(configs)
        self.own: Point = tuple(k.value for k in self.knobs)
        self._index = [{v: i for i, v in enumerate(d)} for d in self.domains]
        for number, group in enumerate(self.groups):
            if group.varied:
                group.picks = self._coarse_picks(number, group)
        self._coarse = self._coarse_points()
        varied = [g for g in self.groups if g.varied]
        self.legal = math.prod(g.legal for g in varied) if varied else 0
        self.own_legal = bool(varied) and self.assessment(self.own).reason is None

    def _varies(self, knob: Knob, kernel: KernelFacts) -> bool:
        if knob.kind in HIP_ONLY:
            return self.limits.hip and (kernel.dot or knob.kind not in _MFMA)
        if knob.kind == "stages":
            return kernel.loops
        return True

    # -- the model, per group and per point ------------------------------------------------

    def _assess(self, number: int, values: tuple[int, ...]) -> Assessment:
        key = (number, values)
        found = self._memo.get(key)
        if found is None:
            group = self.groups[number]
            by_position = dict(zip(group.varied, values, strict=True))
            named = {}
            for knob in group.knobs:
                position = next((p for p in group.varied if self.knobs[p] is knob), None)
                named[knob.name] = by_position[position] if position is not None else knob.value
            blocks = {k.name for k in group.knobs if k.kind == "block"}
            found = assess(named, blocks, group.kernel, self.limits, self.dtype_bytes)
            self._memo[key] = found
        return found

    def _group_values(self, number: int, point: Point) -> tuple[int, ...]:
        return tuple(point[p] for p in self.groups[number].varied)

    def assessment(self, point: Point) -> Assessment:
        """The model's word on a whole point: the first group's reason if one is illegal, else
        the product of the launches' scores (an autotune list's the best of its configs', the
        one its autotuner would run) and the most shared memory one needs."""
        scores: dict[object, float] = {}
        shared = 0
        for number, group in enumerate(self.groups):
            if not group.varied:
                continue  # as the candidate has it, whatever the model thinks
            found = self._assess(number, self._group_values(number, point))
            if found.reason is not None:
                return found
            launch = group.kernel.name if group.knobs[0].config is not None else number
            scores[launch] = max(scores.get(launch, 0.0), found.score)
            shared = max(shared, found.shared_memory_bytes)
        return Assessment(None, math.prod(scores.values()), shared)

    def steps(self, a: Point, b: Point) -> int:
        """Ladder steps between two points, summed over the varied knobs."""
        return sum(abs(self._index[p][a[p]] - self._index[p][b[p]]) for p in range(len(self.knobs)))

    # -- coarse ----------------------------------------------------------------------------

    def _enumerated(self, group: _Group) -> list[list[int]]:
        """The values enumerated for each varied knob of ``group``: the block sizes, warps and
        stages over their ladders (block ladders thinned to every other rung, keeping the
        candidate's value, while there would be more than ``MAX_ENUMERATED``), the AMD-only
        options at the candidate's values."""
        ladders = []
        for position in group.varied:
            knob = self.knobs[position]
            ladders.append(list(self.domains[position]) if knob.kind in (*_MAJOR, "stages") else [knob.value])
        while math.prod(len(ladder) for ladder in ladders) > MAX_ENUMERATED:
            blocks = [i for i, p in enumerate(group.varied)
                      if self.knobs[p].kind == "block" and len(ladders[i]) > 3]
            if not blocks:
                break
            longest = max(blocks, key=lambda i: len(ladders[i]))
            own = ladders[longest].index(self.knobs[group.varied[longest]].value)
            ladders[longest] = [v for i, v in enumerate(ladders[longest]) if (i - own) % 2 == 0]
        return ladders

    def _coarse_picks(self, number: int, group: _Group) -> list[tuple[int, ...]]:
        """The group's legal configurations: the ``COARSE_MAX`` best spaced apart (as many
        for each config of its autotune list; see the module's text), then the rest, best
        first."""
        ranked = []
        own = tuple(self.knobs[p].value for p in group.varied)
        for values in itertools.product(*self._enumerated(group)):
            self.considered += 1
            found = self._assess(number, values)
            if found.reason is not None:
                self.pruned[found.reason] = self.pruned.get(found.reason, 0) + 1
                continue
            group.legal += 1
            distance = sum(abs(self._index[p][v] - self._index[p][o])
                           for p, v, o in zip(group.varied, values, own, strict=True))
            ranked.append((-found.score, distance, values))
        ranked.sort()
        shape = [i for i, p in enumerate(group.varied) if self.knobs[p].kind == "block"]
        shape = shape or [i for i, p in enumerate(group.varied) if self.knobs[p].kind == "warps"]
        spacing = min(COARSE_SPACING, len(shape))

        def apart(a: tuple[int, ...], b: tuple[int, ...]) -> int:
            index = [self._index[group.varied[i]] for i in shape]
            return sum(abs(ix[a[i]] - ix[b[i]]) for ix, i in zip(index, shape, strict=True))

        spaced: list[tuple[int, ...]] = []
        for _, _, values in ranked:
            if len(spaced) < COARSE_MAX * group.configs and all(apart(values, kept) >= spacing
                                                                 for kept in spaced):
                spaced.append(values)
        chosen = set(spaced)
        return spaced + [values for _, _, values in ranked if values not in chosen]

    def _coarse_points(self) -> list[Point]:
        varied = [g for g in self.groups if g.picks]
        points: list[Point] = []
        for i in range(max((-(-len(g.picks) // g.configs) for g in varied), default=0)):
            point = list(self.own)
            for group in varied:
                values = group.picks[(i * group.configs + group.config) % len(group.picks)]
                for position, value in zip(group.varied, values, strict=True):
                    point[position] = value
            if tuple(point) != self.own:
                points.append(tuple(point))
        return list(dict.fromkeys(points))

    # -- refine ----------------------------------------------------------------------------

    def neighbours(self, center: Point) -> list[Point]:
        """The legal points one ladder step from ``center`` in one knob, or in two of one
        group's block sizes and warps together (either direction each), the model's best
        first."""
        if center in self._neighbours:
            return self._neighbours[center]
        moves: list[tuple[tuple[int, int], ...]] = []
        for group in self.groups:
            for position in group.varied:
                moves += [((position, step),) for step in (-1, 1)]
            major = [p for p in group.varied if self.knobs[p].kind in _MAJOR]
            for i, a in enumerate(major):
                for b in major[i + 1:]:
                    moves += [((a, s), (b, t)) for s in (-1, 1) for t in (-1, 1)]
        found: dict[Point, tuple[float, int]] = {}
        for move in moves:
            point = list(center)
            for position, step in move:
                index = self._index[position][center[position]] + step
                if not 0 <= index < len(self.domains[position]):
                    break
                point[position] = self.domains[position][index]
            else:
                candidate = tuple(point)
                if candidate == self.own or candidate in found:
                    continue
                verdict = self.assessment(candidate)
                if verdict.reason is None:
                    found[candidate] = (verdict.score, self.steps(candidate, self.own))
        self._neighbours[center] = sorted(found, key=lambda p: (-found[p][0], found[p][1], p))
        return self._neighbours[center]

    # -- variants --------------------------------------------------------------------------

    def variant(self, point: Point, phase: str) -> Variant:
        changes = tuple((k, v) for k, v in zip(self.knobs, point, strict=True) if v != k.value)
        verdict = self.assessment(point)
        return Variant(changes, rewrite(self.code, changes), self.steps(point, self.own),
                       verdict.shared_memory_bytes, verdict.score, phase, point)

    def coarse_batch(self, seen: set[Point], count: int) -> list[Variant]:
        """The next ``count`` coarse variants not in ``seen`` (which they are added to)."""
        batch = []
        for point in self._coarse:
            if len(batch) >= count:
                break
            if point not in seen:
                seen.add(point)
                batch.append(self.variant(point, "coarse"))
        return batch

    def refine_batch(self, seen: set[Point], centers: Iterable[Point], count: int) -> list[Variant]:
        """The next ``count`` variants not in ``seen`` (which they are added to): the
        neighbours of the first of ``centers`` (best first) that has some left, the model's
        best first, then of the next; coarse variants when no centre has any."""
        batch: list[Variant] = []
        for center in centers:
            for point in self.neighbours(center):
                if len(batch) >= count:
                    return batch
                if point not in seen:
                    seen.add(point)
                    batch.append(self.variant(point, "refine"))
        return batch + self.coarse_batch(seen, count - len(batch))

    def plan(self, budget: int) -> list[Variant]:
        """``budget`` variants in the search's order without a judge: the coarse picks, then
        the neighbours of the variants so far, the model's best first."""
        seen = {self.own}
        chosen = self.coarse_batch(seen, coarse_count(budget))
        while len(chosen) < budget:
            centers = [v.point for v in sorted(chosen, key=lambda v: -v.score)]
            wanted = budget - len(chosen)
            batch = self.refine_batch(seen, centers or [self.own], wanted)
            chosen += batch
            if len(batch) < wanted:
                break  # nothing left anywhere
        return chosen


def coarse_count(budget: int) -> int:
    """Coarse variants of a tuning of ``budget`` variants: half of them, at most ``COARSE_MAX``."""
    return max(1, min(COARSE_MAX, math.ceil(budget / 2))) if budget > 0 else 0


def generate_variants(code: str, limits: Limits, *, budget: int = 16, dtype_bytes: int = 2,
                      knobs: list[Knob] | None = None) -> Generation:
    """The first ``budget`` variants of ``code`` in the search's order without a judge (the
    coarse picks, then refinements around the model's best). ``dtype_bytes`` is the element
    size the model assumes for loads and ``tl.dot`` operands. The candidate's own
    configuration is never among the variants."""
    search = Search(code, limits, dtype_bytes=dtype_bytes, knobs=knobs)
    result = Generation(knobs=search.knobs, considered=search.considered, pruned=dict(search.pruned))
    if not search.knobs:
        return result
    result.variants = search.plan(budget)
    result.over_budget = max(0, search.legal - search.own_legal - len(result.variants))
    return result
