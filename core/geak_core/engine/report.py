"""Summaries: the tables the GEAK paper reports, computed from stored evaluations."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from geak_core.api.model import EvalResult, RunSummary, TaskSummary
from geak_core.api.scaling import (
    FAST_P_THRESHOLDS,
    SPEEDUP_METHOD_TEXT,
    SPEEDUP_METHODS,
    FastTask,
    eager_gap,
    fast_p,
    fast_p_key,
    headline_first,
    mean_speedups,
    pass_at_k_curve,
)
from geak_core.api.tasks import Task
from geak_core.engine.category_view import COLUMNS_NOTE, CategoryTask, category_view, has_categories
from geak_core.engine.level_view import level_view
from geak_core.kit.code_metrics import code_metrics


def summarize_task(
    task: Task, lineages: int, results: list[tuple[int, str, EvalResult]], skipped_reason: str | None = None,
    codes: Mapping[str, str] | None = None,
) -> TaskSummary:
    """``results`` holds (lineage, candidate id, result) for every judged candidate of the task;
    ``codes`` their code by candidate id, for the best candidate's code metrics."""
    summary = TaskSummary(
        task_id=task.id, difficulty=task.difficulty, category=task.category, level=task.level,
        has_eager=bool(task.eager), lineages=lineages, samples=len(results), skipped_reason=skipped_reason,
    )
    correct_lineages: set[int] = set()
    call_lineages: set[int] = set()
    best: tuple[float, str] | None = None
    first_correct: str | None = None
    for lineage, candidate_id, result in results:
        summary.call_ok |= result.call_ok
        if result.call_ok:
            call_lineages.add(lineage)
        if result.call_ok and result.correct:
            summary.correct = True
            correct_lineages.add(lineage)
            first_correct = first_correct or candidate_id
            if result.speedup is not None and (best is None or result.speedup > best[0]):
                best = (result.speedup, candidate_id)
    summary.correct_lineages = len(correct_lineages)
    summary.call_lineages = len(call_lineages)
    if best is not None:
        summary.best_speedup, summary.best_candidate_id = best
    else:
        summary.best_candidate_id = first_correct
    best_result = next((r for _, cid, r in results if cid == summary.best_candidate_id), None)
    if best_result is not None:
        summary.best_speedup_vs_eager = best_result.speedup_vs_eager
        summary.best_roofline_fraction = best_result.roofline_fraction
        summary.eager_gap = eager_gap(best_result, summary.has_eager)
    if codes and summary.best_candidate_id in codes:
        summary.best_metrics = code_metrics(codes[summary.best_candidate_id]).to_dict()
    return summary


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rates(tasks: list[TaskSummary]) -> dict[str, Any]:
    judged = [t for t in tasks if t.skipped_reason is None]
    n = len(judged)
    speedups = [t.best_speedup for t in judged if t.correct and t.best_speedup is not None]
    return {
        "tasks": n,
        "call_accuracy": (sum(t.call_ok for t in judged) / n) if n else 0.0,
        "execution_accuracy": (sum(t.correct for t in judged) / n) if n else 0.0,
        "mean_speedup": (sum(speedups) / len(speedups)) if speedups else None,
    }


def summarize_run(
    run_id: str, status: str, tasks: list[TaskSummary], lineages: int, usage: dict[str, Any], note: str = "",
    *, by_iteration: list[dict[str, Any]] | None = None,
) -> RunSummary:
    """The run's tables; ``by_iteration`` is ``scaling.sequential_scaling`` of its candidates."""
    rates = _rates(tasks)
    summary = RunSummary(
        run_id=run_id, status=status, tasks=tasks,
        call_accuracy=rates["call_accuracy"], execution_accuracy=rates["execution_accuracy"],
        mean_speedup=rates["mean_speedup"],
        llm_calls=usage.get("calls", 0),
        tokens=usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
        cost_usd=usage.get("cost_usd"), note=note, by_iteration=list(by_iteration or []),
    )
    judged = [t for t in tasks if t.skipped_reason is None and t.lineages > 0]
    summary.pass_at_k = {f"pass@{k}": v for k, v in
                         pass_at_k_curve([(t.lineages, t.correct_lineages) for t in judged]).items()}
    summary.call_pass_at_k = {f"pass@{k}": v for k, v in
                              pass_at_k_curve([(t.lineages, t.call_lineages) for t in judged]).items()}
    summary.speedups = mean_speedups(
        t.best_speedups for t in judged if t.correct)
    summary.mean_speedup_vs_eager = _mean(
        [t.best_speedup_vs_eager for t in judged if t.correct and t.best_speedup_vs_eager is not None])
    summary.code_metrics = {
        name: _mean([t.best_metrics[name] for t in judged if t.correct and t.best_metrics.get(name) is not None])
        for name in ("cc_mean", "maintainability_index")
    }
    by_difficulty: dict[str, list[TaskSummary]] = defaultdict(list)
    for t in tasks:
        by_difficulty[str(t.difficulty) if t.difficulty is not None else "?"].append(t)
    summary.by_difficulty = {k: _rates(v) for k, v in sorted(by_difficulty.items())}
    summary.by_category = category_view(category_task(t) for t in tasks)
    summary.fast_p = fast_p(FastTask(t.correct, t.best_speedup_vs_eager, t.eager_gap)
                            for t in tasks if t.skipped_reason is None)
    summary.by_level = level_view(category_task(t) for t in tasks)
    return summary


def category_task(task: TaskSummary) -> CategoryTask:
    """What the per-category and per-level views take of a task's summary."""
    return CategoryTask(task.category, judged=task.skipped_reason is None, call_ok=task.call_ok,
                        correct=task.correct, speedup=task.best_speedup,
                        efficiency=task.best_roofline_fraction, level=task.level,
                        speedup_vs_eager=task.best_speedup_vs_eager, eager_gap=task.eager_gap)


def _pct(x: float | None) -> str:
    return f"{100 * x:6.2f}%" if x is not None else f"{'-':>7}"


def _speed(x: float | None) -> str:
    return f"{x:.2f}x" if x is not None else "n/m"


def _num(x: float | None) -> str:
    return f"{x:.1f}" if x is not None else "-"


def _curve(values: list[float]) -> str:
    return " ".join(_pct(v).strip() for v in values)


HEADLINE = "(headline)"


def _speedups(speedups: dict[str, float | None], method: str) -> str:
    """Each aggregate's figure, the headline ``method`` first and marked."""
    return ", ".join(f"{m} {_speed(speedups.get(m))}" + (f" {HEADLINE}" if m == method else "")
                     for m in headline_first(method))


def method_text(method: str) -> str:
    """``mean_ratio: mean of per-shape latency ratios, as the GEAK paper``: the headline
    aggregate named and said."""
    return f"{method}: {SPEEDUP_METHOD_TEXT[method]}" if method in SPEEDUP_METHOD_TEXT else method


def _speed_curve(values: list[float | None]) -> str:
    return " ".join(_speed(v) for v in values)


def format_iteration_speedups(points: list[dict[str, Any]], method: str) -> list[str]:
    """The speedup after each round (``scaling.speedup_by_iteration``) under each aggregate,
    the run's headline ``method`` (its ``speedup_method``, that of ``mean_speedup``) first
    and marked, and how many tasks the means are over; nothing for a summary written before
    these figures were kept."""
    if not points or "speedup_tasks" not in points[0]:
        return []
    if not any(p["speedup_tasks"] for p in points):
        return ["  speedup             n/m after every round (no correct candidate was timed)"]
    lines = [f"  speedup {m:<11} " + _speed_curve([p["speedups"].get(m) for p in points])
             + (f"  {HEADLINE}" if m == method else "")
             for m in headline_first(method)]
    lines.append("  tasks with speedup  " + " ".join(str(p["speedup_tasks"]) for p in points)
                 + "  (mean over these of each one's best correct candidate so far)")
    return lines


def format_scaling(summary: RunSummary) -> list[str]:
    """The scaling curves and the three speedup aggregates, one line each, the run's
    headline aggregate (``speedup_method``) first and marked."""
    lines = []
    if summary.by_iteration:
        lines.append("after each round (sequential scaling), rounds 1.." f"{len(summary.by_iteration)}:")
        lines.append("  call accuracy       " + _curve([p["call_accuracy"] for p in summary.by_iteration]))
        lines.append("  execution accuracy  " + _curve([p["execution_accuracy"] for p in summary.by_iteration]))
        lines.extend(format_iteration_speedups(summary.by_iteration, summary.speedup_method))
    if summary.pass_at_k:
        lines.append(f"pass@k for k = 1..{len(summary.pass_at_k)} (parallel scaling over lineages):")
        if summary.call_pass_at_k:
            lines.append("  call accuracy       " + _curve(list(summary.call_pass_at_k.values())))
        lines.append("  execution accuracy  " + _curve(list(summary.pass_at_k.values())))
    if summary.speedups:
        lines.append("speedup, mean over tasks of the best correct candidate: "
                     + _speedups(summary.speedups, summary.speedup_method))
    return lines


def format_task_table(tasks: list[TaskSummary], count: str = "lineages ok") -> list[str]:
    """One line per task: difficulty, category, call, exec, ``count`` (correct of all: lineages,
    or candidates), and the best correct candidate's speedup, its speedup against PyTorch
    eager (tasks with a torch equivalent), its cyclomatic complexity (mean over its
    functions) and its maintainability index."""
    width = max([len(t.task_id) for t in tasks] + [4])
    lines = [f"{'task':<{width}}  diff  {'category':<14}  call  exec  {count:>11}  best speedup"
             f"  vs eager     CC     MI"]
    for t in tasks:
        if t.skipped_reason:
            lines.append(f"{t.task_id:<{width}}  skipped: {t.skipped_reason}")
            continue
        lines.append(
            f"{t.task_id:<{width}}  {t.difficulty or '-':>4}  {t.category or '-':<14}  "
            f"{'yes' if t.call_ok else 'no':>4}  {'yes' if t.correct else 'no':>4}  "
            f"{t.correct_lineages:>5}/{t.lineages:<5}  {_speed(t.best_speedup):>12}  "
            f"{_speed(t.best_speedup_vs_eager):>8}  {_num(t.best_metrics.get('cc_mean')):>5}  "
            f"{_num(t.best_metrics.get('maintainability_index')):>5}"
        )
    return lines


CATEGORY_HEADER = f"tasks  call acc  exec acc  {'mean speedup':>16}  {'max(IOU, MFU)':>16}"


def _counted(value: str, count: Any) -> str:
    return f"{value} ({count})" if count is not None else value


def format_category_view(by_category: dict[str, dict[str, Any]]) -> list[str]:
    """The per-category table (``geak_core.engine.category_view``): tasks, call and execution
    accuracy, mean speedup and mean max(IOU, MFU) with the count of tasks each mean is over,
    and a note saying what each column averages over. A summary written before the means'
    counts were kept shows '-' for the efficiency."""
    width = max([len(k) for k in by_category] + [len("by category")])
    lines = [f"{'by category':<{width}}  {CATEGORY_HEADER}"]
    lines += [f"{key:<{width}}  {_category_cells(r)}" for key, r in by_category.items()]
    lines.extend(textwrap.wrap(f"({COLUMNS_NOTE})", 100))
    return lines


def _category_cells(r: dict[str, Any]) -> str:
    efficiency = "-" if r.get("mean_efficiency") is None else f"{100 * r['mean_efficiency']:.1f}%"
    return (f"{r['tasks']:>5}  {_pct(r['call_accuracy'])}  {_pct(r['execution_accuracy'])}"
            f"  {_counted(_speed(r['mean_speedup']), r.get('speedup_tasks')):>16}"
            f"  {_counted(efficiency, r.get('efficiency_tasks')):>16}")


FAST_P_TEXT = ("fast_p against PyTorch eager (KernelBench's: the share of judged tasks whose best candidate "
               "is correct and more than p times faster than PyTorch eager)")


def unmeasured_text(entry: Mapping[str, Any]) -> str:
    """How many correct tasks of a fast_p figure had no speedup against PyTorch eager, and why:
    '3 correct tasks not timed: CPU interpreter', or, for several reasons, '3 correct tasks
    without an eager speedup (2 not timed: CPU interpreter; 1 without a PyTorch eager
    equivalent)'; '' where there were none."""
    count = entry.get("unmeasured") or 0
    if not count:
        return ""
    reasons = entry.get("unmeasured_reasons") or {}
    tasks = f"{count} correct task{'' if count == 1 else 's'}"
    if len(reasons) == 1:
        return f"{tasks} {next(iter(reasons))}"
    return f"{tasks} without an eager speedup (" + "; ".join(f"{n} {why}" for why, n in reasons.items()) + ")"


def fast_p_cell(entry: Mapping[str, Any] | None) -> str:
    """'2/3 (66.7%)': n of m tasks and the share; only 'n/m' where some correct task had no
    speedup against eager (the share would count those as slow); '-' for no figure."""
    if not entry:
        return "-"
    cell = f"{entry['n']}/{entry['m']}"
    if entry.get("unmeasured") or entry.get("fraction") is None:
        return cell
    return f"{cell} ({100 * entry['fraction']:.1f}%)"


def format_fast_p(fast: Mapping[str, Mapping[str, Any]]) -> str:
    """'fast_0 2/3 (66.7%), fast_1 ...', then how many correct tasks had no speedup against
    eager and why; '-' for a summary stored before fast_p was kept."""
    if not fast:
        return "-"
    text = ", ".join(f"{key} {fast_p_cell(entry)}" for key, entry in fast.items())
    unmeasured = unmeasured_text(next(iter(fast.values())))
    return text + (f" ({unmeasured}, counted as not fast)" if unmeasured else "")


def _fast_keys(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fast_p keys of ``groups`` (fast_p dicts), in order of p."""
    found: dict[str, float] = {}
    for fast in groups:
        found.update({key: entry.get("p", 0.0) for key, entry in fast.items()})
    return sorted(found, key=lambda k: found[k]) or [fast_p_key(p) for p in FAST_P_THRESHOLDS]


def format_level_view(by_level: dict[str, dict[str, Any]]) -> list[str]:
    """The per-level table (``geak_core.engine.level_view``): tasks, call and execution
    accuracy, mean speedup (with the count of tasks it is over) and fast_p of each level,
    then, per level whose correct tasks were not all timed against eager, how many and why."""
    keys = _fast_keys(r.get("fast_p", {}) for r in by_level.values())
    cells = {level: [fast_p_cell(r.get("fast_p", {}).get(k)) for k in keys] for level, r in by_level.items()}
    sizes = [max([len(k)] + [len(c[i]) for c in cells.values()]) for i, k in enumerate(keys)]
    lines = [f"{'by level':<16}  tasks  call acc  exec acc  {'mean speedup':>16}  "
             + "  ".join(f"{k:>{n}}" for k, n in zip(keys, sizes, strict=True))]
    for level, r in by_level.items():
        lines.append(f"{level:<16}  {r['tasks']:>5}  {_pct(r['call_accuracy'])}  {_pct(r['execution_accuracy'])}"
                     f"  {_counted(_speed(r['mean_speedup']), r.get('speedup_tasks')):>16}  "
                     + "  ".join(f"{c:>{n}}" for c, n in zip(cells[level], sizes, strict=True)))
    for level, r in by_level.items():
        unmeasured = unmeasured_text(next(iter(r.get("fast_p", {}).values()), {}))
        if unmeasured:
            lines.append(f"  level {level}: {unmeasured}, counted as not fast")
    return lines


def format_summary(summary: RunSummary) -> str:
    """Plain-text tables: per task (``format_task_table``), by difficulty, by category,
    overall, scaling curves."""
    lines = [SCRIPTED_NOTE, ""] if summary.scripted else []
    lines += format_task_table(summary.tasks)
    groups = [("difficulty", summary.by_difficulty)]
    categorised = has_categories(category_task(t) for t in summary.tasks)
    if not categorised:
        groups.append(("category", summary.by_category))
    for title, by in groups:
        lines.append("")
        lines.append(f"{'by ' + title:<16}  tasks  call acc  exec acc  mean speedup")
        for key, r in by.items():
            lines.append(
                f"{key:<16}  {r['tasks']:>5}  {_pct(r['call_accuracy'])}  {_pct(r['execution_accuracy'])}"
                f"  {_speed(r['mean_speedup'])}"
            )
    if categorised:
        lines.append("")
        lines.extend(format_category_view(summary.by_category))
    if summary.by_level:
        lines.append("")
        lines.extend(format_level_view(summary.by_level))
    lines.append("")
    passes = "  ".join(f"{k} {_pct(v).strip()}" for k, v in summary.pass_at_k.items())
    lines.append(
        f"overall: call accuracy {_pct(summary.call_accuracy).strip()}, execution accuracy "
        f"{_pct(summary.execution_accuracy).strip()}, mean speedup {_speed(summary.mean_speedup)} "
        f"({method_text(summary.speedup_method)}, over a task's shapes; n/m = not measured)"
        + (f", {passes}" if passes else "")
    )
    metrics = summary.code_metrics
    lines.append(
        f"best correct candidate of each task, mean over tasks: speedup against PyTorch eager "
        f"{_speed(summary.mean_speedup_vs_eager)} (tasks with a torch equivalent), cyclomatic complexity "
        f"{_num(metrics.get('cc_mean'))}, maintainability index {_num(metrics.get('maintainability_index'))} "
        f"(0-100; CC and MI by radon, '-' without it)"
    )
    if summary.fast_p:
        lines.append(f"{FAST_P_TEXT}: {format_fast_p(summary.fast_p)}")
    lines.extend(format_scaling(summary))
    cost = f", cost ${summary.cost_usd:.4f}" if summary.cost_usd else ""
    seed = f"; seed {summary.seed}" if summary.seed is not None else ""
    lines.append(
        f"llm calls {summary.llm_calls}, tokens {summary.tokens}{cost}; status {summary.status}{seed}"
    )
    lines.extend(format_tuning(summary.tuning))
    lines.extend(format_profiling(summary.profiling))
    lines.extend(format_tools(summary.tools))
    if summary.note:
        lines.append(summary.note)
    return "\n".join(lines)


def format_outcome(summary: RunSummary) -> str:
    """The run's figures on one line, where a table of several runs follows (``ablation``):
    tasks judged, call and execution accuracy, the headline speedup."""
    judged = sum(1 for t in summary.tasks if t.skipped_reason is None)
    return (f"{judged} task{'' if judged == 1 else 's'}, call accuracy {_pct(summary.call_accuracy).strip()}, "
            f"execution accuracy {_pct(summary.execution_accuracy).strip()}, "
            f"speedup {_speed(summary.mean_speedup)} ({summary.speedup_method})")


def format_tools(tools: dict[str, Any]) -> list[str]:
    """What a conversing generator's model did with its tools (``RunSummary.tools``): its
    calls by tool and their seconds, the errors and refusals, the drafts judged; nothing for a
    run whose generator gave it none."""
    if not tools:
        return []
    by_tool = ", ".join(f"{tool} {n}" for tool, n in tools.get("by_tool", {}).items())
    rounds = int(tools.get("rounds", 0))
    return [f"tool calls ({tools.get('generator')}): {tools.get('calls', 0)} in {rounds} round{'' if rounds == 1 else 's'}"
            + (f" ({by_tool})" if by_tool else "") + f", {float(tools.get('seconds') or 0.0):.1f} s of tool time; "
            f"{tools.get('errors', 0)} answered with an error, {tools.get('refused', 0)} refused; "
            f"{tools.get('drafts', 0)} drafts judged ({tools.get('drafts_correct', 0)} correct)"]


def format_tuning(tuning: dict[str, Any]) -> list[str]:
    """What the run's tunings did (``RunSummary.tuning``), then each reason a candidate was
    not tuned and each tuner's note, with how often; nothing for a run without a tuner."""
    if not tuning:
        return []
    when = "each correct candidate" if tuning.get("when") == "every_correct" else "each new lineage best"
    lines = [f"tuning ({tuning.get('tuner')}, {when}): {tuning.get('tuned', 0)} candidates tuned, "
             f"{tuning.get('variants_judged', 0)} variants judged ({tuning.get('variants_correct', 0)} correct), "
             f"{tuning.get('kept', 0)} faster kept; {tuning.get('skipped', 0)} candidates not tuned"]
    lines += [f"  {count} x {note}" for note, count in tuning.get("notes", {}).items()]
    return lines


def format_profiling(profiling: dict[str, Any]) -> list[str]:
    """What the run's profiles found (``RunSummary.profiling``): how many candidates had
    each bottleneck, each lineage stopped at the roofline, and each reason a candidate has
    no profile, with how often; nothing for a run without a profiler."""
    if not profiling:
        return []
    when = "each correct candidate" if profiling.get("when") == "every_correct" else "each new lineage best"
    bounds = ", ".join(f"{n} {bound}" for bound, n in profiling.get("bounds", {}).items())
    lines = [f"profiling ({profiling.get('profiler')}, {when}): {profiling.get('profiled', 0)} candidates profiled"
             + (f" (by bottleneck: {bounds})" if bounds else "") + f"; {profiling.get('unprofiled', 0)} without a profile"]
    lines += [f"  lineage {s['task']} L{s['lineage']} stopped {s['reason']}" for s in profiling.get("stopped", [])]
    lines += [f"  {count} x {note}" for note, count in profiling.get("notes", {}).items()]
    return lines


def _table(title: str, rows: list[tuple[str, list[str]]], columns: list[str], width: int,
           label: str = "recipe") -> list[str]:
    sizes = [max([8, len(c)] + [len(cells[i]) for _, cells in rows if i < len(cells)])
             for i, c in enumerate(columns)]
    lines = ["", title, f"{label:<{width}}  " + "  ".join(f"{c:>{n}}" for c, n in zip(columns, sizes, strict=True))]
    for name, cells in rows:
        padded = cells + ["-"] * (len(columns) - len(cells))
        lines.append((f"{name:<{width}}  " + "  ".join(f"{c:>{n}}" for c, n in zip(padded, sizes, strict=True))).rstrip())
    return lines


def is_scripted(llm: Any) -> bool:
    """A recipe's ``[llm]`` table replays hand-written replies (the replay backend's
    ``scripted`` mode), not a model's (a recorded run replayed is still the model's)."""
    return isinstance(llm, dict) and llm.get("backend") == "replay" and llm.get("mode") == "scripted"


SCRIPTED_NOTE = ("scripted replies (the replay backend's scripted mode), not a model's: these figures show the pipeline "
                 "at work, not what a model can do")


def format_comparison(rows: list[tuple[str, RunSummary]], label: str = "recipe") -> str:
    """One row per run: the paper's module-ablation table (with the means over tasks of the
    best candidate's speedup against PyTorch eager, complexity and maintainability index),
    then the speedup under each aggregate with the one each run's speedup column is (its
    headline, ``speedup_method``), then its scaling curves. ``label`` heads the first column,
    what names each row (``ablation``: the recipe, ``compare``: the run)."""
    width = max([len(name) for name, _ in rows] + [6])
    keys = sorted({k for _, s in rows for k in s.pass_at_k}, key=lambda k: int(k.partition("@")[2] or 0))
    header = (f"{label:<{width}}  tasks  call acc  exec acc  speedup  vs eager     CC     MI  "
              + "  ".join(f"{k:>8}" for k in keys))
    lines = [header.rstrip()]
    for name, s in rows:
        judged = sum(1 for t in s.tasks if t.skipped_reason is None)
        passes = "  ".join(f"{_pct(s.pass_at_k[k]) if k in s.pass_at_k else '-':>8}" for k in keys)
        lines.append(
            f"{name:<{width}}  {judged:>5}  {_pct(s.call_accuracy)}  {_pct(s.execution_accuracy)}"
            f"  {_speed(s.mean_speedup):>7}  {_speed(s.mean_speedup_vs_eager):>8}"
            f"  {_num(s.code_metrics.get('cc_mean')):>5}  {_num(s.code_metrics.get('maintainability_index')):>5}"
            f"  {passes}".rstrip()
        )
    if any(s.tools for _, s in rows):  # a tool-calling run beside others: what each spent of its budget
        lines += _table("what each run spent: LLM calls and tokens, and the tool calls a conversing generator's "
                        "model made with their seconds",
                        [(n, [str(s.llm_calls), str(s.tokens), str(s.tools.get("calls", 0)),
                              f"{float(s.tools.get('seconds') or 0.0):.1f}"]) for n, s in rows],
                        ["llm calls", "tokens", "tool calls", "tool s"], width, label)
    lines += _table("speedup by aggregate (mean over tasks of the best correct candidate; headline: the "
                    "aggregate of each run's speedup column above)",
                    [(n, [s.speedup_method, *(_speed(s.speedups.get(m)) for m in SPEEDUP_METHODS)])
                     for n, s in rows],
                    ["headline", *SPEEDUP_METHODS], width, label)
    fast_keys = _fast_keys(s.fast_p for _, s in rows)
    lines += _table(FAST_P_TEXT + "; n/m tasks, the share where every correct task was timed against eager",
                    [(n, [fast_p_cell(s.fast_p.get(k)) for k in fast_keys]) for n, s in rows], fast_keys, width, label)
    for name, s in rows:
        unmeasured = unmeasured_text(next(iter(s.fast_p.values()), {}))
        if unmeasured:
            lines.append(f"  {name}: {unmeasured}, counted as not fast")
    call_keys = sorted({k for _, s in rows for k in s.call_pass_at_k}, key=lambda k: int(k.partition("@")[2] or 0))
    if call_keys:
        lines += _table("call accuracy pass@k (parallel scaling)",
                        [(n, [_pct(s.call_pass_at_k[k]).strip() if k in s.call_pass_at_k else "-"
                              for k in call_keys]) for n, s in rows], call_keys, width, label)
    rounds = max((len(s.by_iteration) for _, s in rows), default=0)
    if rounds:
        columns = [f"round {i}" for i in range(1, rounds + 1)]
        for kind, field in (("execution", "execution_accuracy"), ("call", "call_accuracy")):
            lines += _table(f"{kind} accuracy after each round (sequential scaling)",
                            [(n, [_pct(p[field]).strip() for p in s.by_iteration]) for n, s in rows],
                            columns, width, label)
        lines += _table("speedup after each round (mean over tasks of the best correct candidate so far, "
                        "under each run's speedup method; tasks without one left out)",
                        [(n, [_speed(p.get("mean_speedup")) if "speedup_tasks" in p else "-"
                              for p in s.by_iteration]) for n, s in rows],
                        columns, width, label)
    categorised = [(n, s) for n, s in rows if has_categories(category_task(t) for t in s.tasks)]
    if categorised:
        keys = sorted({k for _, s in categorised for k in s.by_category})
        key_width = max([len(k) for k in keys] + [len("category")])
        lines += ["", "by category",
                  f"{label:<{width}}  {'category':<{key_width}}  {CATEGORY_HEADER}"]
        for key in keys:
            lines += [f"{n:<{width}}  {key:<{key_width}}  {_category_cells(s.by_category[key])}"
                      for n, s in categorised if key in s.by_category]
        lines.extend(textwrap.wrap(f"({COLUMNS_NOTE})", 100))
    scripted = [name for name, s in rows if s.scripted]
    if scripted:
        lines += ["", f"{', '.join(scripted)}: {SCRIPTED_NOTE}"]
    return "\n".join(lines)
