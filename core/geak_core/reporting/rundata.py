"""A stored run read back as rows: one per candidate, with its prompt, reply and verdict.

``geak-core report`` and ``geak-core export`` both read runs through here, so the
two never disagree on what a candidate, a round kind or a verdict is. Nothing
is recomputed: verdicts are the judge's stored ones, the prompt and reply are
the recorded LLM call, a candidate's profiles its ``profiled`` events, and where
a candidate was judged more than once (a resumed run) its latest verdict counts.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.components import TOOL_DRAFT, TUNE_KIND
from geak_core.api.model import Candidate, EvalResult, RunSummary
from geak_core.api.profiling import ProfileRecord
from geak_core.engine.store import MANIFEST_FILE, RECIPE_FILE, SUMMARY_FILE, RunStore

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_SLOT = re.compile(r"/L(\d+)/I(\d+)(?:/P(\d+))?$")


@dataclass
class CandidateRow:
    """One candidate of a run: where it came from, what the model was asked and said, and
    what the judge decided."""

    candidate: Candidate
    result: EvalResult | None
    round_kind: str  # generate | reflect | optimize | restart (the prompt that produced it) | tune | tool
    proposal: int = 0  # which of the call's completions (optimisation rounds may ask several)
    prompt: list[dict[str, str]] = field(default_factory=list)  # chat messages, role and content
    reply: str | None = None
    model: str | None = None
    backend: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    profiles: list[ProfileRecord] = field(default_factory=list)  # what profilers found of it, in order
    stop_reason: str | None = None  # why its lineage optimized no more after it (the roofline)
    # the tool calls of its round's conversation (``tool_call`` events, in order), for a round's
    # candidate; for a draft (round kind ``tool``), the call that judged it
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def profile(self) -> ProfileRecord | None:
        """Its latest profile with counters, else its latest profile (saying why there are
        none), else None."""
        return next((p for p in reversed(self.profiles) if p.ok), self.profiles[-1] if self.profiles else None)

    @property
    def verdict(self) -> str:
        return verdict_of(self.result)


@dataclass
class TaskInfo:
    task_id: str
    difficulty: int | None = None
    category: str | None = None
    skipped_reason: str | None = None
    level: int | None = None  # KernelBench's level, where the suite gives one
    has_eager: bool | None = None  # the task has a PyTorch eager equivalent; None: not recorded


@dataclass
class RunData:
    run_id: str
    dir: Path
    name: str
    status: str
    recipe: dict[str, Any]
    manifest: dict[str, Any]
    summary: RunSummary | None
    usage: dict[str, Any]
    tasks: dict[str, TaskInfo]
    rows: list[CandidateRow]
    # Recipe changes a resume was allowed to make (--allow-changes): when, which recipe, what.
    recipe_history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def lineages(self) -> int:
        agent = self.recipe.get("agent", {})
        seen = {r.candidate.lineage for r in self.rows}
        return int(agent.get("lineages") or (max(seen) + 1 if seen else 1))

    @property
    def iterations(self) -> int:
        agent = self.recipe.get("agent", {})
        seen = {r.candidate.iteration for r in self.rows}
        return int(agent.get("iterations") or (max(seen) + 1 if seen else 1))

    @property
    def model(self) -> str:
        llm = self.recipe.get("llm", {})
        return str(llm.get("model") or next((r.model for r in self.rows if r.model), "") or "")

    @property
    def speedup_method(self) -> str:
        """The run's headline aggregate (``scaling.run_speedup_method``): its timed verdicts'
        one method; else its summary's; else its recipe's ``[evaluator] speedup_method``
        (a stored recipe has every default filled); else the default."""
        from geak_core.api.scaling import run_speedup_method

        configured = self.summary.speedup_method if self.summary is not None else \
            self.recipe.get("evaluator", {}).get("speedup_method")
        return run_speedup_method((r.result for r in self.rows if r.result is not None), configured)

    def rows_of(self, task_id: str) -> list[CandidateRow]:
        return [r for r in self.rows if r.candidate.task_id == task_id]


def verdict_of(result: EvalResult | None) -> str:
    """correct | wrong (ran, outputs differ or a check failed) | failed (did not run) |
    skipped | judge_error | unjudged."""
    if result is None:
        return "unjudged"
    if "skipped" in result.flags:
        return "skipped"
    if "judge_error" in result.flags:
        return "judge_error"
    if result.correct:
        return "correct"
    return "wrong" if result.call_ok else "failed"


def _slot(candidate_id: str) -> tuple[int, int, int]:
    match = _SLOT.search(candidate_id)
    if not match:
        return 0, 0, 0
    return int(match[1]), int(match[2]), int(match[3] or 0)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _tasks(run_dir: Path, summary: RunSummary | None, task_ids: list[str]) -> dict[str, TaskInfo]:
    infos: dict[str, TaskInfo] = {}
    if summary is not None:
        for t in summary.tasks:
            infos[t.task_id] = TaskInfo(t.task_id, t.difficulty, t.category, t.skipped_reason, t.level,
                                        t.has_eager)
    for path in sorted((run_dir / "tasks").glob("*.json")):
        data = _read_json(path) or {}
        s = data.get("summary") or {}
        if s.get("task_id") and s["task_id"] not in infos:
            infos[s["task_id"]] = TaskInfo(s["task_id"], s.get("difficulty"), s.get("category"),
                                           s.get("skipped_reason"), s.get("level"), s.get("has_eager"))
    for task_id in task_ids:
        infos.setdefault(task_id, TaskInfo(task_id))
    return infos


def load_run(run_dir: str | Path) -> RunData:
    """Every candidate of the run in ``run_dir`` (a run folder with its store)."""
    run_dir = Path(run_dir)
    with RunStore(run_dir) as store:
        candidates = store.candidates()
        evaluations = store.evaluations()
        calls = {c["id"]: c for c in store.llm_calls()}
        usage = store.usage()
        name = store.meta("name", "") or ""
        status = store.meta("status", "?")
        history = store.meta("recipe_history", []) or []
        profiled = [e["payload"] for e in store.iter_events("profiled")]
        stops = {str(e["payload"].get("candidate")): str(e["payload"].get("reason"))
                 for e in store.iter_events("lineage_stopped")}
        conversations: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
        for e in store.iter_events("tool_call"):
            conversations.setdefault((e["task_id"], e["lineage"], e["iteration"]), []).append(e["payload"])
    try:
        recipe = tomllib.loads((run_dir / RECIPE_FILE).read_text())
    except (OSError, tomllib.TOMLDecodeError):
        recipe = {}
    manifest = _read_json(run_dir / MANIFEST_FILE) or {}
    summary_data = _read_json(run_dir / SUMMARY_FILE)
    summary = RunSummary.from_dict(summary_data) if isinstance(summary_data, dict) else None

    latest: dict[str, EvalResult] = {}
    for candidate_id, result in evaluations:
        latest[candidate_id] = result
    known = {c.id for c in candidates}
    for candidate_id, result in latest.items():
        if candidate_id not in known:  # no code could be extracted: judged, never stored as code
            lineage, iteration, _ = _slot(candidate_id)
            candidates.append(Candidate(candidate_id, result.task_id, "", lineage, iteration))
            known.add(candidate_id)
    profiles: dict[str, list[ProfileRecord]] = {}
    for payload in profiled:
        record = ProfileRecord.from_dict(payload)
        profiles.setdefault(record.candidate_id, []).append(record)
    rows = []
    for c in candidates:
        call = calls.get(c.llm_call_id or "")
        if call is None and not c.llm_call_id and c.origin != TUNE_KIND:  # a tuned variant had no call
            call = _call_by_slot(calls.values(), c)
        proposal = _slot(c.id)[2]
        row = CandidateRow(candidate=c, result=latest.get(c.id), round_kind=c.origin, proposal=proposal,
                           profiles=profiles.get(c.id, []), stop_reason=stops.get(c.id))
        conversation = sorted(conversations.get((c.task_id, c.lineage, c.iteration), []),
                              key=lambda payload: int(payload.get("index") or 0))
        if c.origin == TOOL_DRAFT:  # its prompt, the model's answer and their cost are its round candidate's
            row.tool_calls = [p for p in conversation if p.get("candidate") == c.id]
        else:
            row.tool_calls = conversation if c.origin != TUNE_KIND else []
            if call is not None:
                _fill_from_call(row, call, proposal)
        rows.append(row)
    llm = recipe.get("llm", {})
    for row in rows:
        row.backend = str(llm.get("backend") or "") or None
        row.model = row.model or (str(llm.get("model") or "") or None)
    # a round's drafts after its candidate, whose conversation they come from
    rows.sort(key=lambda r: (r.candidate.task_id, r.candidate.lineage, r.candidate.iteration,
                             r.candidate.origin == TOOL_DRAFT, r.proposal))
    task_ids = sorted({r.candidate.task_id for r in rows})
    return RunData(run_id=run_dir.name, dir=run_dir, name=name, status=status, recipe=recipe,
                   manifest=manifest, summary=summary, usage=usage,
                   tasks=_tasks(run_dir, summary, task_ids), rows=rows,
                   recipe_history=[h for h in history if isinstance(h, dict)])


def _call_by_slot(calls: Any, candidate: Candidate) -> dict[str, Any] | None:
    """The call of a candidate stored without its call id (no code was extracted)."""
    for call in calls:
        meta = call.get("meta") or {}
        task = str(meta.get("task", ""))
        if (task == candidate.task_id or task.endswith("/" + candidate.task_id)) and \
                meta.get("lineage") == candidate.lineage and meta.get("iteration") == candidate.iteration:
            return call
    return None


def _fill_from_call(row: CandidateRow, call: dict[str, Any], proposal: int) -> None:
    request = call.get("request") or {}
    response = call.get("response") or {}
    meta = call.get("meta") or {}
    row.round_kind = str(meta.get("purpose") or (request.get("meta") or {}).get("purpose") or row.round_kind)
    messages = [m for m in request.get("messages", []) if isinstance(m, dict)]
    if row.tool_calls:  # a conversation's last request: its opening prompt (the calls are the events)
        messages = messages[:next((i for i, m in enumerate(messages) if m.get("role") == "assistant"),
                                  len(messages))]
    row.prompt = [{"role": str(m.get("role", "")), "content": str(m.get("content", ""))} for m in messages]
    texts = response.get("texts") or []
    row.reply = texts[proposal] if proposal < len(texts) else None
    row.model = response.get("model") or None
    usage = response.get("usage") or {}
    if proposal == 0:  # a call's usage and cost belong to its first completion only, so sums hold
        row.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        row.completion_tokens = int(usage.get("completion_tokens") or 0)
        row.cost_usd = response.get("cost_usd")


__all__ = ["CandidateRow", "RunData", "TaskInfo", "load_run", "verdict_of"]
