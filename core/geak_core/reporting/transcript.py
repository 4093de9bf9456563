"""What the model was asked and answered: a run's candidates with their prompts, replies,
extracted code, verdicts and profiles (``geak-core runs log``), read through
``rundata.load_run``. A round held as a conversation (the ``tools`` generator) shows its
opening prompt, then every tool call with the result the model was sent, then the final
reply, under the round's candidate; each draft the model had judged follows with its code and
verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from geak_core.api.components import TOOL_DRAFT, TUNE_KIND
from geak_core.api.errors import InputError
from geak_core.api.model import EvalResult
from geak_core.api.profiling import ProfileRecord, bound_line, counters_text
from geak_core.reporting.rundata import CandidateRow, load_run, verdict_of


def entries(run_dir: str | Path, task: str | None = None, candidate: str | None = None) -> list[CandidateRow]:
    """The run's candidates in order (task, lineage, round, proposal), each with its prompt,
    reply and latest verdict; ``task`` / ``candidate`` keep one task or one candidate. An
    unknown task or candidate is an :class:`InputError` naming known ones."""
    rows = load_run(run_dir).rows
    if task is not None:
        known = sorted({r.candidate.task_id for r in rows})
        if task not in known:
            raise InputError(f"no candidate of task {task!r} in this run (tasks: {', '.join(known) or 'none'})")
        rows = [r for r in rows if r.candidate.task_id == task]
    if candidate is not None:
        chosen = [r for r in rows if r.candidate.id == candidate]
        if not chosen:
            sample = ", ".join(r.candidate.id for r in rows[:5])
            raise InputError(f"no candidate {candidate!r} in this run (for instance: {sample or 'none'})")
        rows = chosen
    return rows


def to_dict(row: CandidateRow) -> dict[str, Any]:
    c = row.candidate
    return {
        "candidate_id": c.id, "task_id": c.task_id, "lineage": c.lineage, "iteration": c.iteration,
        "round": row.round_kind, "proposal": row.proposal, "strategy": c.strategy, "parent_id": c.parent_id,
        "messages": row.prompt, "reply": row.reply, "code": c.code,
        "verdict": row.result.to_dict() if row.result is not None else None,
        "profiles": [p.to_dict() for p in row.profiles], "lineage_stopped": row.stop_reason,
        "tool_calls": row.tool_calls,
    }


def verdict_text(result: EvalResult | None) -> str:
    """The verdict in a line: its kind (``rundata.verdict_of``), the speedup of a correct
    candidate, else the failed stage and the judge's reason."""
    if result is None:
        return "not judged"
    kind = verdict_of(result)
    if kind == "correct":
        return kind + (f", speedup {result.speedup:.3f}x" if result.speedup is not None else "")
    reason = (result.reason or "").strip()
    return f"{kind} ({result.failed_stage}): {reason}" if reason else f"{kind} ({result.failed_stage})"


def profile_lines(record: ProfileRecord) -> list[str]:
    """A profile as ``runs log`` shows it: a heading line (the profiler, the case, the class,
    or why there is no profile), then its evidence and its longest kernels' counters."""
    where = f"{record.profiler or 'profile'}" + (f", case {record.case}" if record.case else "")
    if not record.ok:
        return [f"({where}) {record.error or 'the profiler saw no kernel'}"]
    head = bound_line(record.diagnosis) if record.diagnosis else "no bottleneck could be read from the counters"
    return ([f"({where}) {head}"] + [f"  {line}" for line in (record.diagnosis.evidence if record.diagnosis else ())]
            + [f"  kernel {line}" for line in counters_text(record)])


def tool_call_heading(payload: dict[str, Any]) -> str:
    """A tool call in a line: its number and turn, the tool, its arguments (a code as its
    length), the draft it made, its seconds, and whether it failed or was refused."""
    arguments = ", ".join(f"{k}={v!r}" if not isinstance(v, str) or k != "code" else f"code={v}"
                          for k, v in (payload.get("arguments") or {}).items())
    text = f"tool call {payload.get('index')} (turn {payload.get('turn')}): {payload.get('tool')}({arguments})"
    if payload.get("candidate"):
        text += f" -> {payload['candidate']}"
    if payload.get("refused"):
        return text + ", refused"
    return text + f", {float(payload.get('seconds') or 0.0):.1f} s" + (", error" if payload.get("is_error") else "")


def render(rows: list[CandidateRow], style: Any = None) -> str:
    """The transcript as text; ``style(text, **click_style_kwargs)`` colours headings (None:
    plain)."""
    paint = style or (lambda text, **_: text)
    lines: list[str] = []
    for row in rows:
        c = row.candidate
        lines.append(paint(f"=== {c.task_id}  lineage {c.lineage}, round {c.iteration}  {row.round_kind or '?'}"
                           f"  [{c.id}]", bold=True))
        if c.strategy:
            lines.append(f"strategy: {c.strategy}")
        if c.parent_id:
            lines.append(f"builds on: {c.parent_id}")
        if c.origin == TOOL_DRAFT:
            lines.append("(a draft the model had judged through a tool; its conversation is under the round's "
                         "candidate)")
        elif not row.prompt and row.reply is None:
            lines.append("(tuned without the LLM: the candidate it builds on, its launch configuration "
                         "changed)" if c.origin == TUNE_KIND else "(no LLM call recorded for this candidate)")
        for message in row.prompt:
            lines.append(paint(f"--- prompt ({message.get('role', '?')})", fg="cyan"))
            lines.append(str(message.get("content", "")).rstrip())
        for payload in row.tool_calls:
            if payload.get("said") and c.origin != TOOL_DRAFT:
                lines.append(paint(f"--- the model (turn {payload.get('turn')})", fg="cyan"))
                lines.append(str(payload["said"]).rstrip())
            colour = "yellow" if payload.get("is_error") else "cyan"
            lines.append(paint(f"--- {tool_call_heading(payload)}", fg=colour))
            lines.append(str(payload.get("result", "")).rstrip())
        if row.reply is not None:
            lines.append(paint("--- reply" + (" (final)" if row.tool_calls else ""), fg="cyan"))
            lines.append(row.reply.rstrip())
        lines.append(paint("--- code" + (" (the round's answer)" if row.tool_calls and c.origin != TOOL_DRAFT
                                         else "" if c.origin == TOOL_DRAFT else " (extracted)"), fg="cyan"))
        lines.append(c.code.rstrip() if c.code else "(none: no usable code in the reply)")
        colour = "green" if row.result is not None and row.result.correct else "yellow"
        lines.append(paint(f"--- verdict: {verdict_text(row.result)}", fg=colour))
        for record in row.profiles:
            heading, *rest = profile_lines(record)
            lines.append(paint(f"--- profile {heading}", fg="cyan"))
            lines.extend(rest)
        if row.stop_reason:
            lines.append(paint(f"--- lineage stopped {row.stop_reason}", fg="green"))
        lines.append("")
    return "\n".join(lines)
