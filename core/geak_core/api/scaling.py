"""Scaling curves and speedup aggregates: pure functions over judged candidates.

The GEAK paper reports its scaling results as curves:

* **sequential scaling**: call and execution accuracy after each iteration
  (``accuracy_by_iteration``). A lineage counts at iteration ``i`` when one of
  its candidates from rounds ``0 .. i-1`` passed; the value is the mean over
  tasks of the share of lineages that did, which is pass@1 at a budget of
  ``i`` rounds (one lineage: plain accuracy). Beside it, the speedup after
  each iteration (``speedup_by_iteration``): per task, the best correct
  candidate of rounds ``0 .. i-1`` over all its lineages, averaged over the
  tasks that have a timed correct one by then, as the paper averages over
  correct kernels (a task without one is left out, not counted as 0 or 1;
  ``speedup_tasks`` says how many were in). ``sequential_scaling`` gives both
  in one entry per iteration, as ``summary.json``'s ``by_iteration``.
* **parallel scaling**: pass@k for every k from 1 to the number of lineages,
  for call and for execution accuracy (``pass_at_k_curve``), with the unbiased
  estimator of ``geak_core.api.model.pass_at_k`` over each task's lineages.

Speedup: a candidate's latencies over a task's shapes can be aggregated three
ways, all always reported (``SPEEDUP_METHODS``):

* ``mean_ratio``: arithmetic mean of the per-shape ratios, the paper's
  definition (mean over tests of per-test latency ratios), the default;
* ``sum``: total reference time over total candidate time (GEAK-eval's shipped
  code);
* ``geomean``: geometric mean of the per-shape ratios.

The judge's ``speedup_method`` names the headline (``EvalResult.speedup``,
``set_speedups``): the figure that picks a task's best candidate, ranks the
optimizer's history and makes a run's ``mean_speedup``; the other two are kept
beside it. ``headline_first`` orders the three for display.

KernelBench's headline, ``fast_p`` (``fast_p``): the share of tasks whose best
candidate is correct and more than ``p`` times faster than PyTorch eager, for each
``p`` of ``FAST_P_THRESHOLDS``. A correct task without a speedup against eager
(not timed, as under the Triton interpreter, or without a PyTorch eager
equivalent) cannot count as fast; each figure says how many such tasks there
were and why (``eager_gap``), so that a run that timed nothing reads as
unmeasured rather than as 0 %.
A case the judge flagged as impossible (``ShapeResult.flags``, one of
``UNCOUNTED_SHAPE_FLAGS``: ``above_peak``) counts in none of them: every
aggregate here, and so everything built on them (the headline, the best
candidate, the optimizer's archive, the tuner's choice, the run's summary),
is over the counted cases alone (``ShapeResult.counted``); ``uncounted_shapes``
names the others. A candidate none of whose timed cases counts has no speedup.

Everything here takes plain records (``Judged``) so it can be fed from a live
run, from a run store (``judged_from_store``) or from an exported data set.
The function names are stable: reports and exports build on them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from geak_core.api.model import (
    DEFAULT_SPEEDUP_METHOD,
    LEGACY_SPEEDUP_METHOD,
    UNCOUNTED_SHAPE_FLAGS,
    EvalResult,
    ShapeResult,
    pass_at_k,
)

if TYPE_CHECKING:
    from geak_core.engine.store import RunStore

SPEEDUP_METHODS: tuple[str, ...] = ("sum", "geomean", "mean_ratio")
# What each aggregate is, in a phrase, for the texts that name the headline.
SPEEDUP_METHOD_TEXT: dict[str, str] = {
    "sum": "sum of baseline latencies over sum of candidate latencies, as GEAK-eval's code",
    "geomean": "geometric mean of per-shape latency ratios",
    "mean_ratio": "mean of per-shape latency ratios, as the GEAK paper",
}


# ---------------------------------------------------------------------------
# Speedup aggregates of one candidate
# ---------------------------------------------------------------------------


def _timed(shapes: Iterable[ShapeResult]) -> list[ShapeResult]:
    """The shapes every aggregate is over: timed on both sides, and counted (no flag of
    ``UNCOUNTED_SHAPE_FLAGS``)."""
    return [s for s in shapes if s.reference_ms and s.candidate_ms and s.counted]


def uncounted_shapes(shapes: Iterable[ShapeResult]) -> list[ShapeResult]:
    """The timed shapes no aggregate counts (a flag of ``UNCOUNTED_SHAPE_FLAGS``), in order."""
    return [s for s in shapes if s.reference_ms and s.candidate_ms and not s.counted]


def speedup_sum(shapes: Iterable[ShapeResult]) -> float | None:
    """Sum of reference latencies over sum of candidate latencies (GEAK-eval's figure)."""
    timed = _timed(shapes)
    if not timed:
        return None
    return sum(s.reference_ms for s in timed) / sum(s.candidate_ms for s in timed)  # type: ignore[misc]


def speedup_geomean(shapes: Iterable[ShapeResult]) -> float | None:
    """Geometric mean of the per-shape latency ratios."""
    timed = _timed(shapes)
    if not timed:
        return None
    return math.exp(sum(math.log(s.speedup) for s in timed) / len(timed))  # type: ignore[arg-type]


def speedup_mean_ratio(shapes: Iterable[ShapeResult]) -> float | None:
    """Arithmetic mean of the per-shape latency ratios (the paper's definition)."""
    timed = _timed(shapes)
    if not timed:
        return None
    return sum(s.speedup for s in timed) / len(timed)  # type: ignore[misc]


def speedup_aggregates(shapes: Iterable[ShapeResult]) -> dict[str, float | None]:
    """All three aggregates of one candidate's per-shape timings, keyed by method name."""
    shapes = list(shapes)
    return {"sum": speedup_sum(shapes), "geomean": speedup_geomean(shapes),
            "mean_ratio": speedup_mean_ratio(shapes)}


def set_speedups(result: EvalResult, method: str) -> EvalResult:
    """Fill ``result``'s three aggregates from its shapes and make ``method``'s the headline
    (``speedup``, ``speedup_method``): what the judge does with a timed candidate."""
    if method not in SPEEDUP_METHODS:
        raise ValueError(f"unknown speedup method {method!r} (one of {', '.join(SPEEDUP_METHODS)})")
    found = speedup_aggregates(result.shapes)
    result.speedup_sum, result.speedup_geomean, result.speedup_mean_ratio = (
        found["sum"], found["geomean"], found["mean_ratio"])
    result.speedup, result.speedup_method = found[method], method
    return result


def headline_first(method: str) -> list[str]:
    """The aggregates, the headline ``method`` first and the others in ``SPEEDUP_METHODS`` order."""
    return [method] + [m for m in SPEEDUP_METHODS if m != method] if method in SPEEDUP_METHODS \
        else list(SPEEDUP_METHODS)


def run_speedup_method(results: Iterable[EvalResult], configured: str | None = None) -> str:
    """The headline aggregate of a run's (or a batch's) verdicts: the one method its timed
    verdicts were given; else (nothing timed, or timed under several methods after a
    resume that changed it) ``configured``, the judge's ``speedup_method`` where known;
    else ``DEFAULT_SPEEDUP_METHOD``."""
    timed = {r.speedup_method for r in results if r.speedup is not None and r.speedup_method}
    if len(timed) == 1:
        return timed.pop()
    return configured if configured in SPEEDUP_METHODS else DEFAULT_SPEEDUP_METHOD


def eager_speedup(shapes: Iterable[ShapeResult], method: str) -> float | None:
    """PyTorch eager over candidate latency, aggregated by ``method`` over the shapes that
    have an eager latency (``ShapeResult.eager_ms``); None where none has."""
    pairs = [ShapeResult(s.case, reference_ms=s.eager_ms, candidate_ms=s.candidate_ms, flags=list(s.flags))
             for s in shapes if s.eager_ms]
    return speedup_aggregates(pairs)[method]


def result_speedups(result: EvalResult) -> dict[str, float | None]:
    """The three aggregates of a verdict: from its shapes, else from the figures it carries.

    Only a correct candidate has a speedup; a verdict without per-shape timings keeps
    whatever aggregates the judge stored (``speedup_sum``, ``speedup_geomean``, and
    ``speedup`` under its ``speedup_method``). One whose timed shapes are all uncounted
    has none.
    """
    if not (result.call_ok and result.correct):
        return dict.fromkeys(SPEEDUP_METHODS)
    found = speedup_aggregates(result.shapes)
    if uncounted_shapes(result.shapes):
        return found
    stored = {"sum": result.speedup_sum, "geomean": result.speedup_geomean, "mean_ratio": result.speedup_mean_ratio}
    if result.speedup is not None and result.speedup_method in stored and stored[result.speedup_method] is None:
        stored[result.speedup_method] = result.speedup
    return {m: found[m] if found[m] is not None else stored[m] for m in SPEEDUP_METHODS}


# ---------------------------------------------------------------------------
# Judged candidates
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """One judged candidate, as the scaling curves see it (iteration counts from 0).

    ``speedups``: its three aggregates (``result_speedups``); ``speedup``: the judge's
    headline figure, ``EvalResult.speedup`` under the verdict's ``speedup_method``. Both
    are empty for a candidate that is not correct.
    """

    task_id: str
    lineage: int
    iteration: int
    call_ok: bool
    correct: bool
    speedups: Mapping[str, float | None] = field(default_factory=dict)
    speedup: float | None = None

    @classmethod
    def from_result(cls, task_id: str, lineage: int, iteration: int, result: EvalResult) -> Judged:
        correct = bool(result.call_ok and result.correct)
        return cls(task_id, lineage, iteration, bool(result.call_ok), correct, result_speedups(result),
                   result.speedup if correct else None)


def judged_from_store(store: RunStore) -> list[Judged]:
    """Every stored candidate with its latest verdict, in candidate order.

    A resumed run stores a recorded verdict again when it replays the round; the last
    verdict per candidate counts once. Replies without code are stored as failed
    verdicts without a candidate row; they change no curve and are left out.
    """
    verdicts = {candidate_id: result for candidate_id, result in store.evaluations()}
    return [Judged.from_result(c.task_id, c.lineage, c.iteration, verdicts[c.id])
            for c in store.candidates() if c.id in verdicts]


def _by_task(judged: Iterable[Judged]) -> dict[str, list[Judged]]:
    grouped: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        grouped[j.task_id].append(j)
    return grouped


# ---------------------------------------------------------------------------
# Sequential scaling
# ---------------------------------------------------------------------------


def accuracy_by_iteration(
    judged: Iterable[Judged], lineages: Mapping[str, int], iterations: int
) -> list[dict[str, float]]:
    """Call and execution accuracy after 1 .. ``iterations`` rounds.

    ``lineages`` maps every judged task (skipped ones left out) to its number of
    lineages; a task whose candidates were never judged counts as failed. Each entry is
    ``{"iteration": i, "call_accuracy": ..., "execution_accuracy": ...}``; both are
    cumulative (a lineage keeps what it reached), so the curves never fall.
    """
    if not lineages or iterations < 1:
        return []
    first_call: dict[tuple[str, int], int] = {}
    first_exec: dict[tuple[str, int], int] = {}
    for j in judged:
        if j.task_id not in lineages:
            continue
        key = (j.task_id, j.lineage)
        if j.call_ok:
            first_call[key] = min(first_call.get(key, j.iteration), j.iteration)
        if j.correct:
            first_exec[key] = min(first_exec.get(key, j.iteration), j.iteration)
    def share(first: dict[tuple[str, int], int], task: str, n: int, rounds: int) -> float:
        return sum(1 for lineage in range(n) if first.get((task, lineage), rounds) < rounds) / n if n else 0.0

    tasks = list(lineages.items())
    curve = []
    for i in range(1, iterations + 1):
        curve.append({
            "iteration": i,
            "call_accuracy": sum(share(first_call, t, n, i) for t, n in tasks) / len(tasks),
            "execution_accuracy": sum(share(first_exec, t, n, i) for t, n in tasks) / len(tasks),
        })
    return curve


def _best(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def _mean(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def speedup_by_iteration(
    judged: Iterable[Judged], lineages: Mapping[str, int], iterations: int
) -> list[dict[str, Any]]:
    """Speedup after 1 .. ``iterations`` rounds, the paper's sequential-scaling speedup.

    For each task of ``lineages`` (skipped ones left out) and each ``i``, the best speedup
    among its correct candidates of rounds ``0 .. i-1``, over all its lineages, as the run's
    summary takes a task's best; then the mean over the tasks that have one. A task with
    no correct timed candidate yet is left out of that mean (the paper's mean speedup is
    over correct kernels), so the figure can fall when a task's first, slow kernel joins.
    Each entry is ``{"iteration": i, "mean_speedup": ..., "speedups": {"sum": ...,
    "geomean": ..., "mean_ratio": ...}, "speedup_tasks": n}``: ``mean_speedup`` averages
    the judge's headline figure (``EvalResult.speedup``, under the run's
    ``speedup_method``), ``speedups`` each aggregate, and ``speedup_tasks`` counts the
    tasks with a correct timed candidate so far, those the means are over (the judge draws
    the headline and every aggregate from the same timed shapes). None and 0 where nothing
    was timed, as under the Triton interpreter.
    """
    if not lineages or iterations < 1:
        return []
    grouped = _by_task(j for j in judged if j.correct and j.task_id in lineages)
    curve = []
    for i in range(1, iterations + 1):
        so_far = {task: [j for j in grouped.get(task, []) if j.iteration < i] for task in lineages}
        headline = [_best(j.speedup for j in found) for found in so_far.values()]
        per_method = [best_speedups(found) for found in so_far.values()]
        curve.append({
            "iteration": i,
            "mean_speedup": _mean(headline),
            "speedups": {m: _mean(b[m] for b in per_method) for m in SPEEDUP_METHODS},
            "speedup_tasks": sum(1 for h, b in zip(headline, per_method, strict=True)
                                 if h is not None or any(v is not None for v in b.values())),
        })
    return curve


def sequential_scaling(
    judged: Iterable[Judged], lineages: Mapping[str, int], iterations: int
) -> list[dict[str, Any]]:
    """One entry per iteration 1 .. ``iterations``: ``accuracy_by_iteration`` and
    ``speedup_by_iteration`` side by side (``summary.json``'s ``by_iteration``)."""
    judged = list(judged)
    return [{**accuracy, **speedup} for accuracy, speedup in
            zip(accuracy_by_iteration(judged, lineages, iterations),
                speedup_by_iteration(judged, lineages, iterations), strict=True)]


# ---------------------------------------------------------------------------
# Parallel scaling
# ---------------------------------------------------------------------------


def lineage_counts(judged: Iterable[Judged], lineages: Mapping[str, int]) -> dict[str, tuple[int, int, int]]:
    """Per task: (lineages, lineages with a call-accurate candidate, lineages with a correct one)."""
    call: dict[str, set[int]] = defaultdict(set)
    correct: dict[str, set[int]] = defaultdict(set)
    for j in judged:
        if j.call_ok:
            call[j.task_id].add(j.lineage)
        if j.correct:
            correct[j.task_id].add(j.lineage)
    return {task: (n, len(call[task]), len(correct[task])) for task, n in lineages.items()}


def pass_at_k_curve(counts: Sequence[tuple[int, int]]) -> dict[int, float]:
    """Mean pass@k over tasks for k = 1 .. the largest number of lineages.

    ``counts`` holds (n, c) per task: lineages and lineages that passed. A task takes
    part in pass@k only where k <= n (every task has the same n within one run).
    """
    usable = [(n, c) for n, c in counts if n > 0]
    if not usable:
        return {}
    curve = {}
    for k in range(1, max(n for n, _ in usable) + 1):
        values = [pass_at_k(n, c, k) for n, c in usable if k <= n]
        curve[k] = sum(values) / len(values)
    return curve


# ---------------------------------------------------------------------------
# Speedups over a run
# ---------------------------------------------------------------------------


def best_speedups(judged: Iterable[Judged]) -> dict[str, float | None]:
    """Per method, the best speedup among correct candidates (one task's candidates)."""
    best: dict[str, float | None] = dict.fromkeys(SPEEDUP_METHODS)
    for j in judged:
        if not j.correct:
            continue
        for method in SPEEDUP_METHODS:
            value = j.speedups.get(method)
            if value is not None and (best[method] is None or value > best[method]):  # type: ignore[operator]
                best[method] = value
    return best


def mean_speedups(per_task: Iterable[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Per method, the mean over tasks of each task's best speedup (tasks without one left out)."""
    per_task = list(per_task)
    means: dict[str, float | None] = {}
    for method in SPEEDUP_METHODS:
        values = [t[method] for t in per_task if t.get(method) is not None]
        means[method] = sum(values) / len(values) if values else None  # type: ignore[arg-type]
    return means


# ---------------------------------------------------------------------------
# fast_p: correct and faster than PyTorch eager
# ---------------------------------------------------------------------------

# The thresholds p of fast_p (KernelBench's metric): a task counts towards fast_p when its
# best candidate is correct and its speedup against PyTorch eager is more than p.
FAST_P_THRESHOLDS: tuple[float, ...] = (0.0, 1.0, 2.0)

# Why a correct candidate has no speedup against PyTorch eager (``eager_gap``), each
# worded to follow "N correct tasks".
NOT_TIMED_INTERPRETER = "not timed: CPU interpreter"
NOT_TIMED = "not timed"
NO_EAGER_EQUIVALENT = "without a PyTorch eager equivalent"
EAGER_NOT_TIMED = "whose PyTorch eager run was not timed"
NO_EAGER_SPEEDUP = "without an eager speedup"


def fast_p_key(p: float) -> str:
    """``fast_0``, ``fast_1``, ``fast_1.5``: how a threshold is named in summaries."""
    return f"fast_{p:g}"


def eager_gap(result: EvalResult | None, has_eager: bool | None = None) -> str | None:
    """Why the correct verdict ``result`` has no speedup against PyTorch eager; None when it
    has one or is not correct. ``has_eager``: whether its task has a PyTorch eager
    equivalent (``Task.eager``), None where that is not known (a summary stored before it
    was kept). A task without one could never be timed against eager, so that reason
    comes first; then a verdict that was not timed (the Triton interpreter on a CPU
    checks correctness only), then an eager run that was not timed beside it."""
    if result is None or not (result.call_ok and result.correct) or result.speedup_vs_eager is not None:
        return None
    if has_eager is False:
        return NO_EAGER_EQUIVALENT
    if not result.performance_measured:
        return NOT_TIMED_INTERPRETER if result.mode == "interpreter" else NOT_TIMED
    return EAGER_NOT_TIMED if has_eager else NO_EAGER_SPEEDUP


@dataclass(frozen=True)
class FastTask:
    """A judged task as ``fast_p`` sees it: whether its best candidate is correct, that
    candidate's speedup against PyTorch eager, and why it has none (``eager_gap``)."""

    correct: bool
    speedup_vs_eager: float | None = None
    gap: str | None = None


def fast_p(tasks: Iterable[FastTask], thresholds: Sequence[float] = FAST_P_THRESHOLDS) -> dict[str, dict[str, Any]]:
    """KernelBench's fast_p for each ``p`` of ``thresholds``, keyed ``fast_p_key(p)``.

    ``tasks``: the judged tasks (skipped ones left out). Each entry is ``{"p": p, "n": the
    tasks whose best candidate is correct with a speedup against eager above p, "m": all
    the tasks, "fraction": n / m (None without tasks), "unmeasured": the correct tasks
    without a speedup against eager, "unmeasured_reasons": {why: how many}}``. Those
    correct tasks count as not fast, as KernelBench counts them, so where ``unmeasured``
    is not 0 the fraction is what was measured, not what the kernels can do."""
    tasks = list(tasks)
    m = len(tasks)
    gaps = Counter(t.gap or NO_EAGER_SPEEDUP for t in tasks if t.correct and t.speedup_vs_eager is None)
    figures = {}
    for p in thresholds:
        n = sum(1 for t in tasks if t.correct and t.speedup_vs_eager is not None and t.speedup_vs_eager > p)
        figures[fast_p_key(p)] = {"p": p, "n": n, "m": m, "fraction": n / m if m else None,
                                  "unmeasured": sum(gaps.values()), "unmeasured_reasons": dict(sorted(gaps.items()))}
    return figures


# ---------------------------------------------------------------------------
# Everything at once
# ---------------------------------------------------------------------------


def scaling_summary(judged: Iterable[Judged], lineages: Mapping[str, int], iterations: int) -> dict[str, Any]:
    """The scaling data of one run, as ``summary.json`` stores it under ``scaling``.

    ``by_iteration``: ``sequential_scaling``; ``pass_at_k`` / ``call_pass_at_k``:
    ``pass_at_k_curve`` for execution and call accuracy, keyed ``"1" .. "n"``;
    ``speedups``: ``mean_speedups`` of each task's ``best_speedups``.
    """
    judged = [j for j in judged if j.task_id in lineages]
    counts = lineage_counts(judged, lineages)
    grouped = _by_task(judged)
    return {
        "by_iteration": sequential_scaling(judged, lineages, iterations),
        "pass_at_k": {str(k): v for k, v in pass_at_k_curve([(n, e) for n, _, e in counts.values()]).items()},
        "call_pass_at_k": {str(k): v for k, v in pass_at_k_curve([(n, c) for n, c, _ in counts.values()]).items()},
        "speedups": mean_speedups(best_speedups(grouped.get(task, [])) for task in lineages),
    }


__all__ = [
    "DEFAULT_SPEEDUP_METHOD",
    "EAGER_NOT_TIMED",
    "FAST_P_THRESHOLDS",
    "LEGACY_SPEEDUP_METHOD",
    "SPEEDUP_METHODS",
    "SPEEDUP_METHOD_TEXT",
    "NOT_TIMED",
    "NOT_TIMED_INTERPRETER",
    "NO_EAGER_EQUIVALENT",
    "NO_EAGER_SPEEDUP",
    "FastTask",
    "UNCOUNTED_SHAPE_FLAGS",
    "Judged",
    "accuracy_by_iteration",
    "best_speedups",
    "eager_gap",
    "eager_speedup",
    "fast_p",
    "fast_p_key",
    "headline_first",
    "judged_from_store",
    "lineage_counts",
    "mean_speedups",
    "pass_at_k_curve",
    "result_speedups",
    "run_speedup_method",
    "scaling_summary",
    "sequential_scaling",
    "set_speedups",
    "speedup_aggregates",
    "speedup_by_iteration",
    "speedup_geomean",
    "speedup_mean_ratio",
    "speedup_sum",
    "uncounted_shapes",
]
