"""A run as training data: one row per candidate, and the transitions a run produced.

``candidates`` holds every candidate of the run: the task, the round that produced
it, the prompt the model was given and its reply, the extracted code, the judge's
verdict, speed and roofline figures, the hardware, the model and the code
metrics. ``transitions`` pairs a candidate with the one it was made from (its
``parent_id``: the failing candidate a reflection fixed, the best candidate an
optimisation started from) where the step was

* ``error_to_fix``: the parent failed or was wrong and the child is correct;
* ``slow_to_fast``: both are correct and timed, and the child is faster.

Both tables are written as JSON Lines or Parquet with the columns of
``CANDIDATE_COLUMNS`` / ``TRANSITION_COLUMNS`` (documented in docs/export.md);
a run whose tasks carry categories also gets ``categories``, one row per category
with the figures of ``geak_core.engine.category_view`` (``CATEGORY_COLUMNS``), and
one whose tasks carry KernelBench levels ``levels``, one row per level with the
figures of ``geak_core.engine.level_view``, fast_p included (``LEVEL_COLUMNS``); and
one whose candidates were profiled ``profiles``, one row per profile with its diagnosis and
counters (``PROFILE_COLUMNS``).
``datasets.load_dataset("json" | "parquet", data_files=...)`` loads either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core.api.components import HardwareProfile
from geak_core.api.errors import InputError
from geak_core.api.profiling import ProfileRecord, counters_text
from geak_core.api.scaling import FAST_P_THRESHOLDS, fast_p_key
from geak_core.engine.category_view import category_view, has_categories
from geak_core.engine.level_view import UNLEVELLED, level_view
from geak_core.engine.store import atomic_write
from geak_core.kit.code_metrics import code_metrics
from geak_core.reporting.rundata import CandidateRow, RunData

FORMATS = ("jsonl", "parquet")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # string | int | float | bool | strings (list of strings) | messages
    doc: str


CANDIDATE_COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", "the run's id"),
    Column("suite", "string", "the benchmark suite"),
    Column("task", "string", "the task's id within the suite"),
    Column("difficulty", "int", "the task's difficulty, 1 (easy) to 5, where the suite gives one"),
    Column("category", "string", "the task's category, where the suite gives one"),
    Column("level", "int", "the task's KernelBench level (1, 2, 3), where the suite gives one"),
    Column("candidate_id", "string", "unique in the run: task/L<lineage>/I<iteration>[/P<proposal>]; a draft judged "
           "through a tool: .../T<call>"),
    Column("lineage", "int", "the lineage (parallel scaling), from 0"),
    Column("iteration", "int", "the round within the lineage (sequential scaling), from 0"),
    Column("proposal", "int", "which completion of the round's LLM call, from 0"),
    Column("round_kind", "string", "the prompt that produced it: generate, reflect, optimize or restart; "
           "tune for a tuned variant, tool for a draft judged through a tool"),
    Column("strategy", "string", "the strategy line of the reply"),
    Column("parent_id", "string", "the candidate it was made from (the one reflected on or optimised)"),
    Column("prompt", "messages", "the chat messages sent: a list of {role, content}"),
    Column("reply", "string", "the model's reply, as received"),
    Column("code", "string", "the code extracted from the reply (empty when none was found)"),
    Column("verdict", "string", "correct, wrong (ran, a check failed), failed (did not run), skipped, "
                                "judge_error or unjudged"),
    Column("call_ok", "bool", "imported, compiled and ran on the task's inputs"),
    Column("correct", "bool", "every correctness and anti-cheat check passed"),
    Column("failed_stage", "string", "the first stage that did not pass: extract, import, contract, run, "
                                     "stage1, stage2, anticheat, timing"),
    Column("reason", "string", "the judge's one-line reason"),
    Column("error", "string", "the trimmed traceback or compiler message"),
    Column("flags", "strings", "the judge's flags (suspicious_speedup, not_timed, ...)"),
    Column("speedup", "float", "baseline over candidate latency, aggregated by speedup_method (the headline); "
                               "correct candidates timed on a GPU only"),
    Column("speedup_method", "string", "which aggregate speedup is: mean_ratio (the GEAK paper's, the default), "
                                       "sum (GEAK-eval's code) or geomean; sum for a verdict stored without one"),
    Column("speedup_sum", "float", "sum of baseline latencies over sum of candidate latencies"),
    Column("speedup_geomean", "float", "geometric mean of per-shape latency ratios"),
    Column("speedup_mean_ratio", "float", "arithmetic mean of per-shape latency ratios (the paper's)"),
    Column("speedup_vs_eager", "float", "PyTorch eager over candidate latency, aggregated by speedup_method "
                                        "over the shapes with an eager latency; tasks with a torch "
                                        "equivalent, correct candidates timed on a GPU only"),
    Column("roofline_fraction", "float", "mean over timed shapes of achieved / peak (bandwidth or compute, "
                                         "the larger share)"),
    Column("performance_measured", "bool", "the candidate was timed"),
    Column("mode", "string", "gpu, or interpreter (the Triton interpreter on a CPU: correctness only)"),
    Column("device", "string", "the device the judge ran on"),
    Column("hardware", "string", "the hardware profile matching the device (h100, mi300x, ...)"),
    Column("model", "string", "the LLM that wrote the reply"),
    Column("backend", "string", "the LLM backend (openai, gemini, replay, ...)"),
    Column("prompt_tokens", "int", "the call's prompt tokens (on proposal 0 of a call; 0 on others)"),
    Column("completion_tokens", "int", "the call's completion tokens (likewise)"),
    Column("cost_usd", "float", "the call's cost where the backend knows prices (likewise)"),
    Column("cc_mean", "float", "mean cyclomatic complexity of the code's functions (radon)"),
    Column("cc_max", "int", "largest cyclomatic complexity of the code's functions"),
    Column("maintainability_index", "float", "radon's maintainability index, 0-100"),
    Column("sloc", "int", "source lines of code"),
)

# Each transitions column is read from one candidate of the pair, as (column, "before" or
# "after", the candidates column it copies, doc); its type is that column's. "kind" alone is
# the pair's own (transition_kind).
_PAIR_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("run_id", "after", "run_id", "the run's id"),
    ("suite", "after", "suite", "the benchmark suite"),
    ("task", "after", "task", "the task's id"),
    ("kind", "", "", "error_to_fix or slow_to_fast"),
    ("lineage", "after", "lineage", "the lineage both candidates belong to"),
    ("round_kind", "after", "round_kind", "the round that made the second candidate (reflect, optimize, ...)"),
    ("prompt", "after", "prompt", "the messages that asked for the second candidate (for a fix: the first's "
                                  "code and the judge's report)"),
    ("reply", "after", "reply", "the reply that gave the second candidate"),
    ("before_id", "before", "candidate_id", "the first candidate"),
    ("after_id", "after", "candidate_id", "the second candidate"),
    ("before_code", "before", "code", "the first candidate's code"),
    ("after_code", "after", "code", "the second candidate's code"),
    ("before_verdict", "before", "verdict", "the first's verdict"),
    ("before_failed_stage", "before", "failed_stage", "the first's failed stage"),
    ("before_reason", "before", "reason", "the judge's reason for the first"),
    ("before_error", "before", "error", "the first's trimmed traceback"),
    ("after_verdict", "after", "verdict", "the second's verdict (correct)"),
    ("before_speedup", "before", "speedup", "the first's speedup (under its speedup_method)"),
    ("after_speedup", "after", "speedup", "the second's speedup (under its speedup_method)"),
    ("speedup_method", "after", "speedup_method", "the aggregate of the second's speedup (the headline)"),
    ("before_maintainability_index", "before", "maintainability_index", "the first's maintainability index"),
    ("after_maintainability_index", "after", "maintainability_index", "the second's maintainability index"),
    ("hardware", "after", "hardware", "the hardware profile of the second's verdict"),
    ("model", "after", "model", "the LLM that wrote the second"),
)
_CANDIDATE_TYPES = {c.name: c.type for c in CANDIDATE_COLUMNS}
TRANSITION_COLUMNS: tuple[Column, ...] = tuple(
    Column(name, _CANDIDATE_TYPES[source] if source else "string", doc) for name, _, source, doc in _PAIR_COLUMNS
)


CATEGORY_COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", "the run's id"),
    Column("suite", "string", "the benchmark suite"),
    Column("category", "string", "the task category (? for the tasks without one)"),
    Column("tasks", "int", "the category's judged tasks (skipped ones left out)"),
    Column("call_accuracy", "float", "share of those tasks with a candidate that compiled and ran (call rate)"),
    Column("execution_accuracy", "float", "share of those tasks with a correct candidate (exec rate)"),
    Column("mean_speedup", "float", "mean over the correct tasks whose best candidate was timed of its speedup"),
    Column("speedup_method", "string", "the aggregate of mean_speedup: the run's headline speedup_method"),
    Column("speedup_tasks", "int", "how many tasks mean_speedup is over"),
    Column("mean_efficiency", "float", "mean over the correct tasks whose best candidate has a roofline "
                                       "fraction of that fraction: max(IOU, MFU) averaged over its timed shapes"),
    Column("efficiency_tasks", "int", "how many tasks mean_efficiency is over"),
)


LEVEL_COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", "the run's id"),
    Column("suite", "string", "the benchmark suite"),
    Column("level", "int", "the KernelBench level (null for the tasks without one)"),
    Column("tasks", "int", "the level's judged tasks (skipped ones left out)"),
    Column("call_accuracy", "float", "share of those tasks with a candidate that compiled and ran"),
    Column("execution_accuracy", "float", "share of those tasks with a correct candidate"),
    Column("mean_speedup", "float", "mean over the correct tasks whose best candidate was timed of its speedup"),
    Column("speedup_method", "string", "the aggregate of mean_speedup: the run's headline speedup_method"),
    Column("speedup_tasks", "int", "how many tasks mean_speedup is over"),
    *(column for p in FAST_P_THRESHOLDS for column in (
        Column(fast_p_key(p), "float", f"fast_{p:g}: share of the level's tasks whose best candidate is correct "
                                       f"and more than {p:g} times faster than PyTorch eager"),
        Column(f"{fast_p_key(p)}_tasks", "int", f"how many tasks those are (the n of fast_{p:g} = n / tasks)"))),
    Column("eager_unmeasured", "int", "correct tasks without a speedup against PyTorch eager, counted as not fast"),
    Column("eager_unmeasured_reasons", "string", "why, with how many: '2 not timed: CPU interpreter; 1 without a "
                                                 "PyTorch eager equivalent'"),
)


PROFILE_COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", "the run's id"),
    Column("task", "string", "the task's id within the suite"),
    Column("candidate_id", "string", "the profiled candidate (a row of candidates)"),
    Column("lineage", "int", "its lineage"),
    Column("iteration", "int", "its round"),
    Column("profiler", "string", "the profiler ([profiler] name): ncu, proton, rocprof, ..."),
    Column("case", "string", "the task's timed case it ran"),
    Column("bound", "string", "the bottleneck: memory, compute, latency or launch; null without counters"),
    Column("peak_fraction", "float", "how close it runs to that bound's peak, 0-1 (for launch: the share "
                                     "of the call its kernels are busy)"),
    Column("evidence", "strings", "the figures that say so, one line each"),
    Column("counters", "strings", "the longest kernels' main counters, one line per kernel"),
    Column("kernels", "string", "every kernel's counters as the profiler read them: a JSON list of objects"),
    Column("numbers", "string", "the diagnosis' figures by name (achieved_gbs, achieved_tflops, "
                                "dram_fraction, ...): a JSON object"),
    Column("seconds", "float", "what the profile cost"),
    Column("error", "string", "why there are no counters (not timed, the tool missing or failing)"),
)


def profile_records(run: RunData) -> list[dict[str, Any]]:
    """One row per profile of the run's candidates, in candidate order."""
    return [profile_record(run, row, p) for row in run.rows for p in row.profiles]


def profile_record(run: RunData, row: CandidateRow, record: ProfileRecord) -> dict[str, Any]:
    c, d = row.candidate, record.diagnosis
    return {
        "run_id": run.run_id, "task": c.task_id, "candidate_id": c.id, "lineage": c.lineage,
        "iteration": c.iteration, "profiler": record.profiler, "case": record.case or None,
        "bound": d.bound if d else None, "peak_fraction": d.peak_fraction if d else None,
        "evidence": list(d.evidence) if d else [], "counters": counters_text(record, limit=len(record.kernels)),
        "kernels": json.dumps([k.to_dict() for k in record.kernels]),
        "numbers": json.dumps(dict(d.numbers)) if d else None, "seconds": record.seconds, "error": record.error,
    }


def level_records(run: RunData) -> list[dict[str, Any]]:
    """One row per KernelBench level (``geak_core.engine.level_view``); none where no task has a level."""
    from geak_core.reporting.html_report import category_tasks, task_stats

    suite = str(run.recipe.get("suite", {}).get("name") or "") or None
    records = []
    for name, figures in level_view(category_tasks(task_stats(run))).items():
        fast = figures["fast_p"]
        first = next(iter(fast.values()), {})
        records.append({
            "run_id": run.run_id, "suite": suite, "level": None if name == UNLEVELLED else int(name),
            **{k: figures[k] for k in ("tasks", "call_accuracy", "execution_accuracy", "mean_speedup",
                                       "speedup_tasks")},
            "speedup_method": run.speedup_method,
            **{key: entry["fraction"] for key, entry in fast.items()},
            **{f"{key}_tasks": entry["n"] for key, entry in fast.items()},
            "eager_unmeasured": first.get("unmeasured", 0),
            "eager_unmeasured_reasons": "; ".join(f"{n} {why}" for why, n in first.get("unmeasured_reasons", {}).items())
            or None,
        })
    return records


def category_records(run: RunData) -> list[dict[str, Any]]:
    """One row per task category (``geak_core.engine.category_view``); none where no task has a category."""
    from geak_core.reporting.html_report import category_tasks, task_stats

    tasks = category_tasks(task_stats(run))
    if not has_categories(tasks):
        return []
    suite = str(run.recipe.get("suite", {}).get("name") or "") or None
    return [{"run_id": run.run_id, "suite": suite, "category": name, **figures,
             "speedup_method": run.speedup_method}
            for name, figures in category_view(tasks).items()]


def _hardware(row: CandidateRow, profiles: list[HardwareProfile]) -> str | None:
    device = row.result.device if row.result else ""
    if not device or (row.result and row.result.mode == "interpreter"):
        return None
    return next((p.name for p in profiles if p.matches(device)), None)


def candidate_record(run: RunData, row: CandidateRow, profiles: list[HardwareProfile]) -> dict[str, Any]:
    c, r = row.candidate, row.result
    info = run.tasks.get(c.task_id)
    metrics = code_metrics(c.code)
    return {
        "run_id": run.run_id,
        "suite": str(run.recipe.get("suite", {}).get("name") or "") or None,
        "task": c.task_id,
        "difficulty": info.difficulty if info else None,
        "category": info.category if info else None,
        "level": info.level if info else None,
        "candidate_id": c.id,
        "lineage": c.lineage,
        "iteration": c.iteration,
        "proposal": row.proposal,
        "round_kind": row.round_kind,
        "strategy": c.strategy or None,
        "parent_id": c.parent_id,
        "prompt": row.prompt,
        "reply": row.reply,
        "code": c.code,
        "verdict": row.verdict,
        "call_ok": bool(r and r.call_ok),
        "correct": bool(r and r.call_ok and r.correct),
        "failed_stage": r.failed_stage if r else None,
        "reason": r.reason if r else None,
        "error": r.error if r else None,
        "flags": list(r.flags) if r else [],
        "speedup": r.speedup if r else None,
        "speedup_method": r.speedup_method if r else None,
        "speedup_sum": r.speedup_sum if r else None,
        "speedup_geomean": r.speedup_geomean if r else None,
        "speedup_mean_ratio": r.speedup_mean_ratio if r else None,
        "speedup_vs_eager": r.speedup_vs_eager if r else None,
        "roofline_fraction": r.roofline_fraction if r else None,
        "performance_measured": bool(r and r.performance_measured),
        "mode": (r.mode or None) if r else None,
        "device": (r.device or None) if r else None,
        "hardware": _hardware(row, profiles),
        "model": row.model,
        "backend": row.backend,
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "cost_usd": row.cost_usd,
        **metrics.to_dict(),
    }


def transition_kind(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """error_to_fix, slow_to_fast or None for the step from ``before`` to ``after``."""
    if after["verdict"] != "correct":
        return None
    if before["verdict"] in ("failed", "wrong"):
        return "error_to_fix"
    if before["verdict"] == "correct" and before["speedup"] is not None and after["speedup"] is not None \
            and after["speedup"] > before["speedup"]:
        return "slow_to_fast"
    return None


def transition_records(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {c["candidate_id"]: c for c in candidates}
    pairs = []
    for after in candidates:
        before = by_id.get(after["parent_id"] or "")
        if before is None:
            continue
        kind = transition_kind(before, after)
        if kind is None:
            continue
        pair = {"before": before, "after": after}
        pairs.append({name: pair[side][source] if side else kind for name, side, source, _ in _PAIR_COLUMNS})
    return pairs


def _arrow_schema(columns: Iterable[Column]) -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
        "strings": pa.list_(pa.string()),
        "messages": pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
    }
    return pa.schema([pa.field(c.name, types[c.type]) for c in columns])


def write_table(path: Path, records: list[dict[str, Any]], columns: tuple[Column, ...], fmt: str) -> None:
    """``records`` as JSON Lines (one object per line, every column present) or Parquet."""
    names = [c.name for c in columns]
    ordered = [{name: record.get(name) for name in names} for record in records]
    if fmt == "jsonl":
        atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered))
        return
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError("--format parquet needs pyarrow: pip install 'geak-core[export]'") from exc
    table = pa.Table.from_pylist(ordered, schema=_arrow_schema(columns))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    atomic_write(path, sink.getvalue().to_pybytes())


def export_run(run: RunData, out_dir: Path, fmt: str, profiles: list[HardwareProfile]) -> dict[str, Any]:
    """Write ``candidates.<fmt>`` and ``transitions.<fmt>`` under ``out_dir``; say what was written."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    candidates = [candidate_record(run, row, profiles) for row in run.rows]
    transitions = transition_records(candidates)
    files = {"candidates": out_dir / f"candidates.{fmt}", "transitions": out_dir / f"transitions.{fmt}"}
    write_table(files["candidates"], candidates, CANDIDATE_COLUMNS, fmt)
    write_table(files["transitions"], transitions, TRANSITION_COLUMNS, fmt)
    categories = category_records(run)
    if categories:
        files["categories"] = out_dir / f"categories.{fmt}"
        write_table(files["categories"], categories, CATEGORY_COLUMNS, fmt)
    levels = level_records(run)
    if levels:
        files["levels"] = out_dir / f"levels.{fmt}"
        write_table(files["levels"], levels, LEVEL_COLUMNS, fmt)
    profiles = profile_records(run)
    if profiles:
        files["profiles"] = out_dir / f"profiles.{fmt}"
        write_table(files["profiles"], profiles, PROFILE_COLUMNS, fmt)
    kinds: dict[str, int] = {}
    for t in transitions:
        kinds[t["kind"]] = kinds.get(t["kind"], 0) + 1
    return {"files": {k: str(v) for k, v in files.items()}, "candidates": len(candidates),
            "transitions": len(transitions), "kinds": kinds, "categories": len(categories),
            "levels": len(levels), "profiles": len(profiles), "speedup_method": run.speedup_method}


__all__ = ["CANDIDATE_COLUMNS", "CATEGORY_COLUMNS", "FORMATS", "LEVEL_COLUMNS", "PROFILE_COLUMNS", "TRANSITION_COLUMNS",
           "Column", "candidate_record", "category_records", "export_run", "level_records", "profile_records",
           "transition_kind", "transition_records", "write_table"]
