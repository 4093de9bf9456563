"""``geak-core report``: stored runs as one self-contained HTML page.

The page holds a summary and per-task tables, the scaling curves of the GEAK
paper (accuracy and speedup per iteration; pass@k over lineages, call and execution), the
speedup distribution, a roofline plot per hardware profile (with what a profiler measured
of the best candidates, where they were profiled), breakdowns by
category and difficulty, an ablation table when several runs are given, and
each task's best kernel with its diff from the first correct version.

Charts are Plotly figures and the plotly.js bundle is written into the page,
so it opens without a network. Code is highlighted by Pygments. Every figure
comes from the run store through ``geak_core.reporting.rundata`` and ``geak_core.api.scaling``;
nothing is recomputed by judging again.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import html
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from geak_core.reporting.transcript import profile_lines

TEMPLATE = Path(__file__).with_name("assets") / "report.html.j2"

# Peak-table names by the dtype names cases carry (torch's), for the roofline ceilings.
DTYPE_PEAK = {
    "float64": "fp64", "float32": "fp32", "tf32": "tf32", "float16": "fp16", "bfloat16": "bf16",
    "int8": "int8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8",
}
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _plot_modules() -> tuple[Any, Any]:
    try:
        import plotly.graph_objects as go
        import plotly.offline as offline
    except ImportError as exc:
        raise InputError("geak-core report needs plotly and pygments: "
                         "pip install 'geak-core[report]'") from exc
    return go, offline


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


class _Charts:
    def __init__(self) -> None:
        self.go, self.offline = _plot_modules()
        self.count = 0

    def html(self, figure: Any, name: str, height: int = 380) -> str:
        self.count += 1
        figure.update_layout(height=height, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                             template="plotly_white", legend={"orientation": "h", "y": -0.2})
        body = figure.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False,
                              div_id=f"chart-{name}",
                              config={"displaylogo": False, "responsive": True})
        return f'<div class="chart" data-chart="{html.escape(name)}">{body}</div>'


def _label(run: RunData, runs: list[RunData]) -> str:
    names = [r.name or r.run_id for r in runs]
    name = run.name or run.run_id
    return run.run_id if names.count(name) > 1 else name


def sequential_chart(charts: _Charts, runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str:
    go = charts.go
    fig = go.Figure()
    for i, run in enumerate(runs):
        points = curves[run.run_id]["by_iteration"]
        colour = _COLOURS[i % len(_COLOURS)]
        x = [p["iteration"] for p in points]
        label = _label(run, runs)
        fig.add_trace(go.Scatter(x=x, y=[100 * p["execution_accuracy"] for p in points],
                                 name=f"{label}: execution", mode="lines+markers",
                                 line={"color": colour}))
        fig.add_trace(go.Scatter(x=x, y=[100 * p["call_accuracy"] for p in points],
                                 name=f"{label}: call", mode="lines+markers",
                                 line={"color": colour, "dash": "dot"}))
    fig.update_layout(title="Sequential scaling: accuracy after i iterations")
    fig.update_xaxes(title="iterations", dtick=1)
    fig.update_yaxes(title="accuracy (%)", range=[0, 105])
    return charts.html(fig, "sequential")


_METHOD_DASHES = (None, "dash", "dot")  # the headline aggregate solid, the other two after it


def sequential_speedup_chart(charts: _Charts, runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str | None:
    """Mean over tasks of the best correct candidate's speedup after i iterations, one line
    per run and aggregate (the run's headline aggregate solid and named so); None where no
    run timed a correct candidate."""
    go = charts.go
    fig = go.Figure()
    values: list[float] = []
    for i, run in enumerate(runs):
        points = curves[run.run_id]["by_iteration"]
        if not any(p["speedup_tasks"] for p in points):
            continue
        colour = _COLOURS[i % len(_COLOURS)]
        x = [p["iteration"] for p in points]
        label = _label(run, runs)
        headline = run.speedup_method
        for method, dash in zip(headline_first(headline), _METHOD_DASHES, strict=True):
            y = [p["speedups"][method] for p in points]
            values += [v for v in y if v is not None]
            fig.add_trace(go.Scatter(
                x=x, y=y, name=f"{label}: {method}" + (" (headline)" if method == headline else ""),
                mode="lines+markers", line={"color": colour, "dash": dash},
                customdata=[p["speedup_tasks"] for p in points],
                hovertemplate=f"{method}" + " %{y:.3f}x after %{x} iterations<br>"
                              "mean over %{customdata} tasks<extra></extra>"))
    if not values:
        return None
    fig.add_hline(y=1.0, line_dash="dash", line_color="grey")
    fig.update_layout(title="Sequential scaling: speedup after i iterations")
    fig.update_xaxes(title="iterations", dtick=1)
    fig.update_yaxes(title="mean speedup of each task's best (x)", rangemode="tozero")
    return charts.html(fig, "sequential-speedup")


def parallel_chart(charts: _Charts, runs: list[RunData], curves: dict[str, dict[str, Any]]) -> str:
    go = charts.go
    fig = go.Figure()
    for i, run in enumerate(runs):
        colour = _COLOURS[i % len(_COLOURS)]
        label = _label(run, runs)
        for key, name, dash in (("pass_at_k", "execution", None), ("call_pass_at_k", "call", "dot")):
            curve = curves[run.run_id][key]
            fig.add_trace(go.Scatter(x=list(curve), y=[100 * v for v in curve.values()],
                                     name=f"{label}: {name} pass@k", mode="lines+markers",
                                     line={"color": colour, "dash": dash}))
    fig.update_layout(title="Parallel scaling: pass@k over lineages")
    fig.update_xaxes(title="k (lineages)", dtick=1)
    fig.update_yaxes(title="pass@k (%)", range=[0, 105])
    return charts.html(fig, "parallel")


def speedup_chart(charts: _Charts, runs: list[RunData], stats: dict[str, list[TaskStat]]) -> str | None:
    go = charts.go
    fig = go.Figure()
    measured = False
    values: list[float] = []
    for i, run in enumerate(runs):
        colour = _COLOURS[i % len(_COLOURS)]
        rows = [r for r in run.rows if r.verdict == "correct" and r.result and r.result.speedup]
        best = [s for s in stats[run.run_id] if s.best_speedup]
        if not rows:
            continue
        measured = True
        values += [r.result.speedup for r in rows]
        label = _label(run, runs)
        fig.add_trace(go.Box(
            y=[r.result.speedup for r in rows], name=f"{label}: every correct candidate",
            text=[r.candidate.id for r in rows], boxpoints="all", jitter=0.4, pointpos=0,
            marker={"color": colour, "opacity": 0.5}, line={"color": colour},
            hovertemplate="%{text}<br>speedup %{y:.3f}x<extra></extra>"))
        fig.add_trace(go.Box(
            y=[s.best_speedup for s in best], name=f"{label}: best per task",
            text=[s.task_id for s in best], boxpoints="all", jitter=0.4, pointpos=0,
            marker={"color": colour, "symbol": "diamond"}, line={"color": colour},
            hovertemplate="%{text}<br>best speedup %{y:.3f}x<extra></extra>"))
    if not measured:
        return None
    fig.add_hline(y=1.0, line_dash="dash", line_color="grey", annotation_text="as fast as the baseline")
    fig.update_layout(title="Speedup over the timing baseline (log scale)", showlegend=False)
    low, high = min(values + [1.0]) / 1.25, max(values + [1.0]) * 1.25
    fig.update_yaxes(title="speedup (x)", type="log", range=[math.log10(low), math.log10(high)])
    return charts.html(fig, "speedup", height=420)


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


def roofline_chart(charts: _Charts, group: RooflineGroup, index: int) -> str | None:
    go = charts.go
    placed = [p for p in group.points if p.flops and p.bytes and p.achieved_tflops]
    if not placed and not group.measured:
        return None
    fig = go.Figure()
    intensities = [p.flops / p.bytes for p in placed]  # type: ignore[operator]
    intensities += [m.achieved_tflops * 1000 / m.achieved_gbs for m in group.measured]
    low = min(intensities + [0.1]) / 4
    high = max(intensities + [1000.0]) * 4
    xs = [low * (high / low) ** (i / 60) for i in range(61)]
    profile = group.profile
    if profile is not None:
        dtypes = sorted({DTYPE_PEAK.get(p.dtype or "", p.dtype or "") for p in placed} & set(profile.peak_tflops))
        for dtype in dtypes or sorted(profile.peak_tflops)[:1]:
            peak = profile.peak_tflops[dtype]
            fig.add_trace(go.Scatter(
                x=xs, y=[min(peak, x * profile.peak_bandwidth_gbs / 1000) for x in xs], mode="lines",
                name=f"roof {dtype}: {profile.peak_bandwidth_gbs:g} GB/s, {peak:g} TFLOP/s",
                line={"dash": "dash", "width": 1.5}, hoverinfo="name"))
    by_task: dict[tuple[str, str], list[RooflinePoint]] = defaultdict(list)
    for p in placed:
        by_task[(p.run, p.task_id)].append(p)
    several = len({p.run for p in placed}) > 1
    for (run, task_id), points in sorted(by_task.items()):
        fig.add_trace(go.Scatter(
            x=[p.flops / p.bytes for p in points], y=[p.achieved_tflops for p in points],  # type: ignore[operator]
            mode="markers", name=f"{run}: {task_id}" if several else task_id, marker={"size": 9},
            text=[f"{task_id} {p.case}<br>{p.achieved_gbs or 0:.0f} GB/s, {p.achieved_tflops:.3g} TFLOP/s"
                  + (f"<br>{100 * p.fraction:.1f}% of peak ({p.bound} bound)" if p.fraction is not None else "")
                  for p in points],
            hovertemplate="%{text}<extra></extra>"))
    if group.measured:
        fig.add_trace(go.Scatter(
            x=[m.achieved_tflops * 1000 / m.achieved_gbs for m in group.measured],
            y=[m.achieved_tflops for m in group.measured], mode="markers", name="measured by the profiler",
            marker={"size": 11, "symbol": "x", "color": "black"},
            text=[f"{m.task_id} {m.case} ({m.profiler}{', ' + m.run if several else ''})<br>"
                  f"{m.achieved_gbs:.0f} GB/s, {m.achieved_tflops:.3g} TFLOP/s, {m.bound}-bound"
                  for m in group.measured],
            hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(title=f"Roofline: {group.title}")
    fig.update_xaxes(title="arithmetic intensity (FLOP/byte)", type="log")
    fig.update_yaxes(title="achieved TFLOP/s", type="log")
    return charts.html(fig, f"roofline-{index}", height=460)


def breakdown_chart(charts: _Charts, runs: list[RunData], by: dict[str, dict[str, dict[str, Any]]],
                    name: str, title: str) -> str:
    go = charts.go
    fig = go.Figure()
    for i, run in enumerate(runs):
        groups = by[run.run_id]
        fig.add_trace(go.Bar(
            x=list(groups), y=[100 * (g["execution_accuracy"] or 0) for g in groups.values()],
            name=f"{_label(run, runs)}: execution", marker={"color": _COLOURS[i % len(_COLOURS)]},
            text=[f"{g['tasks']} task(s)" for g in groups.values()], textposition="inside",
            hovertemplate="%{x}: %{y:.1f}% (%{text})<extra></extra>"))
    fig.update_layout(title=title, barmode="group")
    fig.update_yaxes(title="execution accuracy (%)", range=[0, 105])
    return charts.html(fig, name, height=340)


def category_tasks(stats: list[TaskStat]) -> list[CategoryTask]:
    return [CategoryTask(s.category, judged=s.skipped_reason is None, call_ok=s.call_ok, correct=s.correct,
                         speedup=s.best_speedup, efficiency=s.best_roofline, level=s.level,
                         speedup_vs_eager=s.best_speedup_vs_eager, eager_gap=s.eager_gap) for s in stats]


def efficiency_chart(charts: _Charts, runs: list[RunData], by: dict[str, dict[str, dict[str, Any]]]) -> str | None:
    """Mean max(IOU, MFU) of each category's best candidates, one bar group per run; None
    where nothing was timed on a GPU a hardware profile knows."""
    go = charts.go
    fig = go.Figure()
    measured = False
    for i, run in enumerate(runs):
        groups = by[run.run_id]
        measured |= any(g["efficiency_tasks"] for g in groups.values())
        fig.add_trace(go.Bar(
            x=list(groups), y=[100 * (g["mean_efficiency"] or 0) for g in groups.values()],
            name=f"{_label(run, runs)}: max(IOU, MFU)", marker={"color": _COLOURS[i % len(_COLOURS)]},
            text=[f"{g['efficiency_tasks']} of {g['tasks']} task(s)" for g in groups.values()],
            textposition="inside",
            hovertemplate="%{x}: %{y:.1f}% of peak, mean over %{text}<extra></extra>"))
    if not measured:
        return None
    fig.update_layout(title="Hardware efficiency by category: mean max(IOU, MFU)", barmode="group")
    fig.update_yaxes(title="max(IOU, MFU) (% of peak)", rangemode="tozero")
    return charts.html(fig, "category-efficiency", height=340)


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


def _measurement_note(run: RunData) -> str:
    modes = {r.result.mode for r in run.rows if r.result and r.result.mode}
    timed = any(r.result and r.result.performance_measured for r in run.rows)
    if timed:
        return ""
    if modes == {"interpreter"}:
        return ("Speed not measured: every verdict of this run came from the Triton interpreter "
                "on a CPU, which checks correctness only.")
    return "Speed not measured: no correct candidate of this run was timed."


def build_report(runs: list[RunData], profiles: list[HardwareProfile] | None = None,
                 title: str | None = None) -> str:
    """The HTML page for ``runs`` (one or more), self-contained."""
    import jinja2

    if not runs:
        raise InputError("no runs to report")
    charts = _Charts()
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
        rooflines.append({"group": group, "chart": roofline_chart(charts, group, index)})
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
                       profile_lines=profile_lines, bottleneck=_bottleneck)
    template = env.from_string(TEMPLATE.read_text(encoding="utf-8"))
    ablation = len(runs) > 1
    differences = recipe_differences(runs) if ablation else []
    page = template.render(
        title=title or ("geak-core report: " + ", ".join(_label(r, runs) for r in runs)),
        generated=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"), version=__version__,
        runs=runs, summaries=summaries, stats=stats, labels={r.run_id: _label(r, runs) for r in runs},
        sequential=sequential_chart(charts, runs, curves),
        sequential_speedup=sequential_speedup_chart(charts, runs, curves),
        parallel=parallel_chart(charts, runs, curves),
        speedup=speedup_chart(charts, runs, stats),
        rooflines=rooflines,
        categories=by_category, difficulties=by_difficulty,
        levels=by_level if any(by_level.values()) else None,
        category_chart=breakdown_chart(charts, runs, by_category, "category", "Execution accuracy by category"),
        categorised=categorised, category_note=COLUMNS_NOTE,
        efficiency_chart=efficiency_chart(charts, runs, by_category) if categorised else None,
        difficulty_chart=breakdown_chart(charts, runs, by_difficulty, "difficulty",
                                         "Execution accuracy by difficulty"),
        ablation=ablation, differences=differences,
        flat_recipes={r.run_id: dotted(r.recipe) for r in runs},
        kernels=kernels, code_metrics=code_metrics, scripted_note=SCRIPTED_NOTE, method_text=SPEEDUP_METHOD_TEXT,
        plotly_js=charts.offline.get_plotlyjs(), pygments_css=highlight_css(),
    )
    return page


__all__ = ["MeasuredPoint", "TaskStat", "build_report", "recipe_differences", "roofline_groups", "scaling_curves",
           "task_stats"]
