"""``geak-core report``: stored runs as one self-contained HTML page.

The page holds a summary and per-task tables, the scaling curves of the GEAK
paper (accuracy and speedup per iteration; pass@k over lineages, call and execution), the
speedup distribution, a roofline plot per hardware profile (with what a profiler measured
of the best candidates, where they were profiled), breakdowns by
category and difficulty, an ablation table when several runs are given, and
each task's best kernel with its diff from the first correct version.

Charts are inline SVG drawn by ``geak_core.reporting.svg_charts`` (hover text in each
point's ``<title>``), so the page is as large as its data and opens without a network or a
charting library. Code is highlighted by Pygments. Every figure
comes from the run store through ``geak_core.reporting.rundata`` and ``geak_core.api.scaling``;
nothing is recomputed by judging again.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from geak_core import __version__
from geak_core.api.components import HardwareProfile
from geak_core.api.errors import InputError
from geak_core.api.profiling import bound_line
from geak_core.api.scaling import (
    SPEEDUP_METHOD_TEXT,
    FastTask,
    Judged,
    best_speedups,
    eager_gap,
    fast_p,
    headline_first,
    lineage_counts,
    mean_speedups,
    pass_at_k_curve,
    sequential_scaling,
)
from geak_core.engine.category_view import COLUMNS_NOTE, CategoryTask, category_view, has_categories
from geak_core.engine.hardware import match_profile
from geak_core.engine.level_view import level_view
from geak_core.engine.recipe import dotted
from geak_core.engine.report import SCRIPTED_NOTE, fast_p_cell, is_scripted, unmeasured_text
from geak_core.kit.code_metrics import CodeMetrics, code_metrics
from geak_core.reporting.rundata import CandidateRow, RunData
from geak_core.reporting.svg_charts import (
    Axis,
    Bars,
    Box,
    Point,
    Rule,
    Series,
    bar_chart,
    box_chart,
    line_chart,
)
from geak_core.reporting.transcript import profile_lines

TEMPLATE = Path(__file__).with_name("assets") / "report.html.j2"

# Peak-table names by the dtype names cases carry (torch's), for the roofline ceilings.
DTYPE_PEAK = {
    "float64": "fp64", "float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16",
    "int8": "int8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
_ROOF_COLOURS = ("#555555", "#8a8a8a", "#b0b0b0")




# ---------------------------------------------------------------------------
# What the page shows, computed from the rows
# ---------------------------------------------------------------------------


@dataclass
class TaskStat:
    task_id: str
    difficulty: int | None
    category: str | None
    skipped_reason: str | None
    rows: list[CandidateRow]
    lineages: int
    call_ok: bool = False
    correct: bool = False
    correct_lineages: int = 0
    best: CandidateRow | None = None
    first_correct: CandidateRow | None = None
    level: int | None = None
    has_eager: bool | None = None

    @property
    def eager_gap(self) -> str | None:
        """Why the best candidate has no speedup against PyTorch eager (``scaling.eager_gap``)."""
        return eager_gap(self.best.result if self.best else None, self.has_eager)

    @property
    def best_speedup(self) -> float | None:
        return self.best.result.speedup if self.best and self.best.result else None

    @property
    def best_speedup_vs_eager(self) -> float | None:
        return self.best.result.speedup_vs_eager if self.best and self.best.result else None

    @property
    def best_roofline(self) -> float | None:
        return self.best.result.roofline_fraction if self.best and self.best.result else None

    @property
    def metrics(self) -> CodeMetrics:
        return code_metrics(self.best.candidate.code) if self.best else CodeMetrics()


def task_stats(run: RunData) -> list[TaskStat]:
    """Per task: what passed, in how many lineages, the best and the first correct candidate.

    The best candidate is the correct one with the highest speedup, ties and unmeasured
    speedups going to the earlier (lineage, iteration) one, as the run's own summary picks it.
    """
    stats = []
    for task_id, info in run.tasks.items():
        rows = run.rows_of(task_id)
        stat = TaskStat(task_id, info.difficulty, info.category, info.skipped_reason, rows, run.lineages,
                        level=info.level, has_eager=info.has_eager)
        correct_lineages = set()
        for row in rows:
            result = row.result
            if result is None:
                continue
            stat.call_ok |= result.call_ok
            if result.call_ok and result.correct:
                stat.correct = True
                correct_lineages.add(row.candidate.lineage)
                stat.first_correct = stat.first_correct or row
                best = stat.best.result.speedup if stat.best and stat.best.result else None
                if result.speedup is not None and (best is None or result.speedup > best):
                    stat.best = row
        stat.correct_lineages = len(correct_lineages)
        stat.best = stat.best or stat.first_correct
        stats.append(stat)
    return stats


def _judged(run: RunData) -> list[Judged]:
    return [Judged.from_result(r.candidate.task_id, r.candidate.lineage, r.candidate.iteration, r.result)
            for r in run.rows if r.result is not None and r.candidate.code]


def _lineages(run: RunData, stats: list[TaskStat]) -> dict[str, int]:
    return {s.task_id: run.lineages for s in stats if s.skipped_reason is None}


def scaling_curves(run: RunData, stats: list[TaskStat]) -> dict[str, Any]:
    """Sequential (accuracy and speedup per iteration: ``scaling.sequential_scaling``) and
    parallel (pass@k, k = 1 .. lineages) curves."""
    judged = _judged(run)
    lineages = _lineages(run, stats)
    counts = lineage_counts(judged, lineages)
    by_task: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        by_task[j.task_id].append(j)
    return {
        "speedups": mean_speedups(best_speedups(by_task.get(task, [])) for task in lineages),
        "by_iteration": sequential_scaling(judged, lineages, run.iterations),
        "pass_at_k": pass_at_k_curve([(n, e) for n, _, e in counts.values()]),
        "call_pass_at_k": pass_at_k_curve([(n, c) for n, c, _ in counts.values()]),
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _geomean(values: list[float]) -> float | None:
    positive = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in positive) / len(positive)) if positive else None


def rates(stats: list[TaskStat]) -> dict[str, Any]:
    judged = [s for s in stats if s.skipped_reason is None]
    speedups = [s.best_speedup for s in judged if s.correct and s.best_speedup is not None]
    eager = [s.best_speedup_vs_eager for s in judged if s.correct and s.best_speedup_vs_eager is not None]
    n = len(judged)
    return {
        "tasks": n,
        "skipped": len(stats) - n,
        "call_accuracy": sum(s.call_ok for s in judged) / n if n else None,
        "execution_accuracy": sum(s.correct for s in judged) / n if n else None,
        "mean_speedup": _mean(speedups),
        "geomean_speedup": _geomean(speedups),
        "mean_speedup_vs_eager": _mean(eager),
        "speedups_measured": len(speedups),
        "fast_p": fast_p(FastTask(s.correct, s.best_speedup_vs_eager, s.eager_gap) for s in judged),
    }


def _metric_means(rows: list[CandidateRow]) -> dict[str, float | None]:
    metrics = [code_metrics(r.candidate.code) for r in rows if r.verdict == "correct"]
    cc = [m.cc_mean for m in metrics if m.cc_mean is not None]
    mi = [m.maintainability_index for m in metrics if m.maintainability_index is not None]
    return {"cc_mean": _mean(cc), "maintainability_index": _mean(mi)}


def match_profiles(devices: set[str], profiles: list[HardwareProfile]) -> dict[str, HardwareProfile | None]:
    """The profile of each recorded device name, by the judge's own matcher (no arch is recorded)."""
    return {d: match_profile(profiles, d, "") for d in devices}


_NOT_A_SETTING = ("run.name", "run.output_dir", "llm.source", "llm.base_url")


def recipe_differences(runs: list[RunData]) -> list[str]:
    """Dotted recipe keys whose values differ between the runs: the ablation's variables."""
    flats = [dotted(r.recipe) for r in runs]
    keys = sorted({k for f in flats for k in f})
    return [k for k in keys if k not in _NOT_A_SETTING and len({repr(f.get(k)) for f in flats}) > 1]


# ---------------------------------------------------------------------------
# Charts
# ---------------------------------------------------------------------------


def _label(run: RunData, runs: list[RunData]) -> str:
    names = [r.name or r.run_id for r in runs]
    name = run.name or run.run_id
    return run.run_id if names.count(name) > 1 else name


def sequential_chart(runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str:
    series = []
    for i, run in enumerate(runs):
        points = curves[run.run_id]["by_iteration"]
        colour = _COLOURS[i % len(_COLOURS)]
        label = _label(run, runs)
        for key, kind, dash in (("execution_accuracy", "execution", None), ("call_accuracy", "call", "dot")):
            series.append(Series(f"{label}: {kind}", [
                Point(p["iteration"], 100 * p[key],
                      f"{label}: {kind} accuracy {100 * p[key]:.1f}% after {p['iteration']} iterations")
                for p in points], colour, dash))
    return line_chart("sequential", "Sequential scaling: accuracy after i iterations", series,
                      Axis("iterations", whole=True), Axis("accuracy (%)", low=0, high=105))


_METHOD_DASHES = (None, "dash", "dot")  # the headline aggregate solid, the other two after it


def sequential_speedup_chart(runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str | None:
    """Mean over tasks of the best correct candidate's speedup after i iterations, one line
    per run and aggregate (the run's headline aggregate solid and named so); None where no
    run timed a correct candidate."""
    series = []
    for i, run in enumerate(runs):
        points = curves[run.run_id]["by_iteration"]
        if not any(p["speedup_tasks"] for p in points):
            continue
        colour = _COLOURS[i % len(_COLOURS)]
        label = _label(run, runs)
        headline = run.speedup_method
        for method, dash in zip(headline_first(headline), _METHOD_DASHES, strict=True):
            series.append(Series(
                f"{label}: {method}" + (" (headline)" if method == headline else ""),
                [Point(p["iteration"], p["speedups"][method],
                       f"{label}: {method} {_speed(p['speedups'][method])} after {p['iteration']} iterations, "
                       f"mean over {p['speedup_tasks']} tasks") for p in points], colour, dash))
    if not any(p.y is not None for s in series for p in s.points):
        return None
    return line_chart("sequential-speedup", "Sequential scaling: speedup after i iterations", series,
                      Axis("iterations", whole=True), Axis("mean speedup of each task's best (x)", from_zero=True),
                      rules=[Rule(1.0)])


def parallel_chart(runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str:
    series = []
    for i, run in enumerate(runs):
        colour = _COLOURS[i % len(_COLOURS)]
        label = _label(run, runs)
        for key, kind, dash in (("pass_at_k", "execution", None), ("call_pass_at_k", "call", "dot")):
            curve = curves[run.run_id][key]
            series.append(Series(f"{label}: {kind} pass@k", [
                Point(k, 100 * v, f"{label}: {kind} pass@{k} {100 * v:.1f}%") for k, v in curve.items()],
                colour, dash))
    return line_chart("parallel", "Parallel scaling: pass@k over lineages", series,
                      Axis("k (lineages)", whole=True), Axis("pass@k (%)", low=0, high=105))


def speedup_chart(runs: list[RunData], stats: dict[str, list[TaskStat]]) -> str | None:
    """Per run, every correct candidate's speedup and each task's best, as boxes with their
    points on a log axis; None where nothing was timed."""
    boxes = []
    for i, run in enumerate(runs):
        colour = _COLOURS[i % len(_COLOURS)]
        rows = [r for r in run.rows if r.verdict == "correct" and r.result and r.result.speedup]
        if not rows:
            continue
        best = [s for s in stats[run.run_id] if s.best_speedup]
        label = _label(run, runs)
        boxes.append(Box(f"{label}: every correct candidate", colour,
                         [r.result.speedup for r in rows],  # type: ignore[union-attr,misc]
                         [f"{r.candidate.id}: speedup {r.result.speedup:.3f}x" for r in rows],  # type: ignore[union-attr]
                         caption=[label, "all correct"]))
        boxes.append(Box(f"{label}: best per task", colour, [s.best_speedup for s in best],  # type: ignore[misc]
                         [f"{s.task_id}: best speedup {s.best_speedup:.3f}x" for s in best],
                         symbol="diamond", caption=[label, "best per task"]))
    if not boxes:
        return None
    return box_chart("speedup", "Speedup over the timing baseline (log scale)", boxes,
                     Axis("speedup (x)", log=True), rules=[Rule(1.0, "as fast as the baseline")])


@dataclass
class RooflinePoint:
    run: str
    task_id: str
    case: str
    dtype: str | None
    flops: float | None
    bytes: float | None
    achieved_gbs: float | None
    achieved_tflops: float | None
    fraction: float | None
    bound: str | None


@dataclass
class MeasuredPoint:
    """What a profiler measured of a best candidate on one case: the bytes and FLOPs its
    kernels moved and did per second of their own time (``Diagnosis.numbers``)."""

    run: str
    task_id: str
    case: str
    profiler: str
    achieved_gbs: float
    achieved_tflops: float
    bound: str


@dataclass
class RooflineGroup:
    title: str
    profile: HardwareProfile | None
    points: list[RooflinePoint] = field(default_factory=list)
    measured: list[MeasuredPoint] = field(default_factory=list)


def roofline_groups(runs: list[RunData], stats: dict[str, list[TaskStat]],
                    profiles: list[HardwareProfile]) -> list[RooflineGroup]:
    """The timed shapes of each task's best candidate, grouped by the profile of its device."""
    groups: dict[str, RooflineGroup] = {}
    devices = {s.best.result.device for r in runs for s in stats[r.run_id]
               if s.best and s.best.result and s.best.result.performance_measured}
    matched = match_profiles(devices, profiles)
    for run in runs:
        for stat in stats[run.run_id]:
            result = stat.best.result if stat.best else None
            if result is None or not result.performance_measured:
                continue
            profile = matched.get(result.device)
            key = profile.name if profile else f"device {result.device}"
            title = (f"{profile.marketing_name} ({profile.name})" if profile
                     else f"{result.device} (no hardware profile matches it: no peaks)")
            group = groups.setdefault(key, RooflineGroup(title, profile))
            for shape in result.shapes:
                if not shape.candidate_ms:
                    continue
                group.points.append(RooflinePoint(
                    _label(run, runs), stat.task_id, shape.case, shape.dtype, shape.flops, shape.bytes,
                    shape.achieved_gbs, shape.achieved_tflops, shape.roofline_fraction, shape.bound))
            measured = _measured_point(_label(run, runs), stat)
            if measured is not None:
                group.measured.append(measured)
    return list(groups.values())


def _measured_point(run: str, stat: TaskStat) -> MeasuredPoint | None:
    """The profiler's throughputs of ``stat``'s best candidate, where it was profiled and
    its kernels moved bytes and did FLOPs."""
    record = stat.best.profile if stat.best else None
    numbers = record.diagnosis.numbers if record is not None and record.diagnosis else {}
    gbs, tflops = numbers.get("achieved_gbs"), numbers.get("achieved_tflops")
    if record is None or record.diagnosis is None or not gbs or not tflops:
        return None
    return MeasuredPoint(run, stat.task_id, record.case, record.profiler, gbs, tflops, record.diagnosis.bound)


def roofline_chart(group: RooflineGroup, index: int) -> str | None:
    """The group's placed shapes (FLOP and bytes known) at their arithmetic intensity and
    achieved TFLOP/s, log-log, under the profile's roofs (bandwidth, then the peak of each
    dtype present); None where no shape can be placed."""
    placed = [p for p in group.points if p.flops and p.bytes and p.achieved_tflops]
    if not placed and not group.measured:
        return None
    intensities = [p.flops / p.bytes for p in placed]  # type: ignore[operator]
    intensities += [m.achieved_tflops * 1000 / m.achieved_gbs for m in group.measured]
    low = min(intensities + [0.1]) / 4
    high = max(intensities + [1000.0]) * 4
    series = []
    profile = group.profile
    if profile is not None:
        dtypes = sorted({DTYPE_PEAK.get(p.dtype or "", p.dtype or "") for p in placed} & set(profile.peak_tflops))
        for n, dtype in enumerate(dtypes or sorted(profile.peak_tflops)[:1]):
            peak = profile.peak_tflops[dtype]
            bandwidth = profile.peak_bandwidth_gbs / 1000  # TFLOP/s per FLOP/byte
            ridge = min(max(peak / bandwidth, low), high)
            name = f"roof {dtype}: {profile.peak_bandwidth_gbs:g} GB/s, {peak:g} TFLOP/s"
            series.append(Series(name, [Point(x, min(peak, x * bandwidth), name) for x in (low, ridge, high)],
                                 _ROOF_COLOURS[n % len(_ROOF_COLOURS)], "dash", markers=False))
    by_task: dict[tuple[str, str], list[RooflinePoint]] = defaultdict(list)
    for p in placed:
        by_task[(p.run, p.task_id)].append(p)
    several = len({p.run for p in placed}) > 1
    for n, ((run, task_id), points) in enumerate(sorted(by_task.items())):
        series.append(Series(
            f"{run}: {task_id}" if several else task_id,
            [Point(p.flops / p.bytes, p.achieved_tflops,  # type: ignore[operator]
                   f"{task_id} {p.case}\n{p.achieved_gbs or 0:.0f} GB/s, {p.achieved_tflops:.3g} TFLOP/s"
                   + (f"\n{100 * p.fraction:.1f}% of peak ({p.bound} bound)" if p.fraction is not None else ""))
             for p in points], _COLOURS[n % len(_COLOURS)], lines=False))
    if group.measured:
        series.append(Series(
            "measured by the profiler",
            [Point(m.achieved_tflops * 1000 / m.achieved_gbs, m.achieved_tflops,
                   f"{m.task_id} {m.case} ({m.profiler}{', ' + m.run if several else ''})\n"
                   f"{m.achieved_gbs:.0f} GB/s, {m.achieved_tflops:.3g} TFLOP/s, {m.bound}-bound")
             for m in group.measured], "#000000", lines=False, symbol="diamond"))
    return line_chart(f"roofline-{index}", f"Roofline: {group.title}", series,
                      Axis("arithmetic intensity (FLOP/byte)", log=True, low=low, high=high),
                      Axis("achieved TFLOP/s", log=True), height=460)


def breakdown_chart(runs: list[RunData], by: dict[str, dict[str, dict[str, Any]]], name: str, title: str) -> str:
    groups = sorted({key for run in runs for key in by[run.run_id]})
    bars = []
    for i, run in enumerate(runs):
        found = by[run.run_id]
        label = _label(run, runs)
        bars.append(Bars(
            f"{label}: execution", _COLOURS[i % len(_COLOURS)],
            [100 * (found[k]["execution_accuracy"] or 0) if k in found else None for k in groups],
            [f"{found[k]['tasks']}" if k in found else "" for k in groups],
            [f"{label}, {k}: {100 * (found[k]['execution_accuracy'] or 0):.1f}% of {found[k]['tasks']} task(s)"
             if k in found else "" for k in groups]))
    return bar_chart(name, title, groups, bars, Axis("execution accuracy (%)", low=0, high=105))


def category_tasks(stats: list[TaskStat]) -> list[CategoryTask]:
    return [CategoryTask(s.category, judged=s.skipped_reason is None, call_ok=s.call_ok, correct=s.correct,
                         speedup=s.best_speedup, efficiency=s.best_roofline, level=s.level,
                         speedup_vs_eager=s.best_speedup_vs_eager, eager_gap=s.eager_gap) for s in stats]


def efficiency_chart(runs: list[RunData], by: dict[str, dict[str, dict[str, Any]]]) -> str | None:
    """Mean max(IOU, MFU) of each category's best candidates, one bar group per run; None
    where nothing was timed on a GPU a hardware profile knows."""
    if not any(g["efficiency_tasks"] for run in runs for g in by[run.run_id].values()):
        return None
    groups = sorted({key for run in runs for key in by[run.run_id]})
    bars = []
    for i, run in enumerate(runs):
        found = by[run.run_id]
        label = _label(run, runs)
        bars.append(Bars(
            f"{label}: max(IOU, MFU)", _COLOURS[i % len(_COLOURS)],
            [100 * (found[k]["mean_efficiency"] or 0) if k in found else None for k in groups],
            [f"{found[k]['efficiency_tasks']}/{found[k]['tasks']}" if k in found else "" for k in groups],
            [f"{label}, {k}: {100 * (found[k]['mean_efficiency'] or 0):.1f}% of peak, mean over "
             f"{found[k]['efficiency_tasks']} of {found[k]['tasks']} task(s)" if k in found else ""
             for k in groups]))
    return bar_chart("category-efficiency", "Hardware efficiency by category: mean max(IOU, MFU)", bars=bars,
                     groups=groups, y_axis=Axis("max(IOU, MFU) (% of peak)", from_zero=True))


def breakdown(stats: list[TaskStat], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[TaskStat]] = defaultdict(list)
    for s in stats:
        value = getattr(s, key)
        groups[str(value) if value is not None else "?"].append(s)
    return {k: rates(v) for k, v in sorted(groups.items())}


# ---------------------------------------------------------------------------
# Code
# ---------------------------------------------------------------------------


def highlight(code: str, language: str = "python") -> str:
    from pygments import highlight as _highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DiffLexer, PythonLexer

    lexer = PythonLexer() if language == "python" else DiffLexer()
    return _highlight(code, lexer, HtmlFormatter(cssclass="hl", linenos="table" if language == "python" else False))


def highlight_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="hl").get_style_defs(".hl")


def kernel_diff(first: CandidateRow, best: CandidateRow) -> str:
    return "".join(difflib.unified_diff(
        first.candidate.code.splitlines(keepends=True), best.candidate.code.splitlines(keepends=True),
        fromfile=f"{first.candidate.id} (first correct)", tofile=f"{best.candidate.id} (best)"))


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------


def _when(value: Any) -> str:
    """A time stamp (seconds since the epoch) as UTC, to the minute."""
    import time

    try:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(value)))
    except (TypeError, ValueError, OverflowError):
        return "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _speed(value: float | None) -> str:
    return "n/m" if value is None else f"{value:.2f}x"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _bottleneck(row: CandidateRow) -> str:
    """A candidate's profiled class with its fraction of peak, why it has no profile, or "-"."""
    record = row.profile
    if record is None:
        return "-"
    if not record.ok:
        return "no profile"
    return bound_line(record.diagnosis) if record.diagnosis else "unread"


def _summary_notes(summaries: list[dict[str, Any]]) -> Iterator[tuple[str, str, str]]:
    """The summary's notes, (kind, run label, text) each: speed not measured, correct tasks
    fast_p counts as not fast, scripted replies."""
    for s in summaries:
        if s["note"]:
            yield "", s["label"], s["note"]
    for s in summaries:
        unmeasured = unmeasured_text(next(iter(s["rates"]["fast_p"].values()), {}))
        if unmeasured:
            yield "fast-p", s["label"], f"fast_p counts {unmeasured} as not fast."
    for s in summaries:
        if s["scripted"]:
            yield "scripted", s["label"], f"{SCRIPTED_NOTE}."


def _measurement_note(run: RunData) -> str:
    modes = {r.result.mode for r in run.rows if r.result and r.result.mode}
    timed = any(r.result and r.result.performance_measured for r in run.rows)
    if timed:
        return ""
    if modes == {"interpreter"}:
        return ("Speed not measured: every verdict came from the Triton interpreter on a CPU, which "
                "checks correctness only.")
    return "Speed not measured: no correct candidate was timed."


def merged_notes(notes: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """One banner per fact: ``(kind, run label, text)`` notes with the same kind and text
    become one naming every run it holds for (``{"kind", "runs", "text"}``), in the order
    each was first said."""
    merged: dict[tuple[str, str], list[str]] = {}
    for kind, label, text in notes:
        merged.setdefault((kind, text), []).append(label)
    return [{"kind": kind, "runs": labels, "text": text} for (kind, text), labels in merged.items()]


def _breakable(text: Any) -> Markup:
    """``text`` escaped, with a line-break opportunity after each ``.``, ``_``, ``-`` and
    ``/``: a run id or a dotted recipe key wraps in a narrow cell instead of widening it."""
    return Markup(re.sub(r"([._/-])", r"\1<wbr>", str(escape(str(text)))))


def build_report(runs: list[RunData], profiles: list[HardwareProfile] | None = None,
                 title: str | None = None) -> str:
    """The HTML page for ``runs`` (one or more), self-contained."""
    import jinja2

    if not runs:
        raise InputError("no runs to report")
    try:
        import pygments  # noqa: F401  (the kernels' and diffs' highlighting)
    except ImportError as exc:
        raise InputError("geak-core report needs pygments: pip install 'geak-core[report]'") from exc
    profiles = profiles or []
    stats = {run.run_id: task_stats(run) for run in runs}
    curves = {run.run_id: scaling_curves(run, stats[run.run_id]) for run in runs}
    summaries = []
    for run in runs:
        s = stats[run.run_id]
        usage = run.usage
        summaries.append({
            "run": run, "label": _label(run, runs), "rates": rates(s),
            "pass_at_k": curves[run.run_id]["pass_at_k"],
            "call_pass_at_k": curves[run.run_id]["call_pass_at_k"],
            "method": run.speedup_method,
            "speedups": [(m, curves[run.run_id]["speedups"].get(m)) for m in headline_first(run.speedup_method)],
            "metrics": _metric_means(run.rows),
            "candidates": len(run.rows),
            "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
            "calls": usage.get("calls", 0), "cost": usage.get("cost_usd"),
            "modes": sorted({r.result.mode for r in run.rows if r.result and r.result.mode}),
            "devices": sorted({r.result.device for r in run.rows if r.result and r.result.device}),
            "note": _measurement_note(run),
            "scripted": (run.summary is not None and run.summary.scripted) or is_scripted(run.recipe.get("llm")),
        })
    groups = roofline_groups(runs, stats, profiles)
    rooflines = []
    for index, group in enumerate(groups):
        rooflines.append({"group": group, "chart": roofline_chart(group, index)})
    by_category = {run.run_id: category_view(category_tasks(stats[run.run_id])) for run in runs}
    categorised = any(has_categories(category_tasks(stats[run.run_id])) for run in runs)
    by_difficulty = {run.run_id: breakdown(stats[run.run_id], "difficulty") for run in runs}
    by_level = {run.run_id: level_view(category_tasks(stats[run.run_id])) for run in runs}
    kernels = []
    for run in runs:
        for stat in stats[run.run_id]:
            if stat.best is None:
                continue
            first = stat.first_correct
            diff = kernel_diff(first, stat.best) if first and first is not stat.best else ""
            kernels.append({
                "run": _label(run, runs), "stat": stat,
                "code": highlight(stat.best.candidate.code),
                "diff": highlight(diff, "diff") if diff else "",
                "metrics": stat.metrics,
            })
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=_pct, speed=_speed, num=_num, when=_when, fast=fast_p_cell, unmeasured=unmeasured_text,
                       profile_lines=profile_lines, bottleneck=_bottleneck, breakable=_breakable)
    template = env.from_string(TEMPLATE.read_text(encoding="utf-8"))
    ablation = len(runs) > 1
    labels = {r.run_id: _label(r, runs) for r in runs}
    differences = recipe_differences(runs) if ablation else []
    page = template.render(
        title=title or ("geak-core report: " + ", ".join(_label(r, runs) for r in runs)),
        generated=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"), version=__version__,
        runs=runs, summaries=summaries, stats=stats, labels=labels,
        sequential=sequential_chart(runs, curves),
        sequential_speedup=sequential_speedup_chart(runs, curves),
        parallel=parallel_chart(runs, curves),
        speedup=speedup_chart(runs, stats),
        rooflines=rooflines,
        categories=by_category, difficulties=by_difficulty,
        levels=by_level if any(by_level.values()) else None,
        category_chart=breakdown_chart(runs, by_category, "category", "Execution accuracy by category"),
        categorised=categorised, category_note=COLUMNS_NOTE,
        efficiency_chart=efficiency_chart(runs, by_category) if categorised else None,
        difficulty_chart=breakdown_chart(runs, by_difficulty, "difficulty",
                                         "Execution accuracy by difficulty"),
        ablation=ablation, differences=differences,
        flat_recipes={r.run_id: dotted(r.recipe) for r in runs},
        banners=merged_notes(_summary_notes(summaries)), level_banners=merged_notes(
            ("fast-p", labels[run.run_id], f"level {level}: fast_p counts {unmeasured} as not fast.")
            for run in runs for level, g in by_level[run.run_id].items()
            if (unmeasured := unmeasured_text(next(iter(g["fast_p"].values()), {})))),
        kernels=kernels, code_metrics=code_metrics, method_text=SPEEDUP_METHOD_TEXT,
        pygments_css=highlight_css(),
    )
    return page


__all__ = ["MeasuredPoint", "TaskStat", "build_report", "recipe_differences", "roofline_groups", "scaling_curves",
           "task_stats"]
