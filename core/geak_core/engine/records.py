"""The record ``geak-core eval`` writes of one verdict (``-o/--out``, one a line or a list),
and the journal such records are written to (``RecordFile``).

One function, so that every writer of a verdict record agrees field for field: ``eval``, the
benchmark scripts (``bench/``) and the judge's tools (``engine.tools``, served over MCP by
``geak-core mcp``), whose ``judge`` answers with the record ``eval`` writes for the same file.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from geak_core.api.model import EvalResult
from geak_core.api.tasks import Task
from geak_core.engine.store import atomic_write


def result_record(task: Task, result: EvalResult) -> dict[str, Any]:
    """The record of one verdict: its task, its candidate and every figure of ``result``."""
    return {
        "task": task.id,
        "suite": task.suite,
        "candidate": result.candidate_id,
        "call_ok": result.call_ok,
        "correct": result.correct,
        "failed_stage": result.failed_stage,
        "reason": result.reason,
        "error": result.error,
        "speedup": result.speedup,
        "speedup_sum": result.speedup_sum,
        "speedup_geomean": result.speedup_geomean,
        "speedup_mean_ratio": result.speedup_mean_ratio,
        "speedup_method": result.speedup_method,
        "speedup_vs_eager": result.speedup_vs_eager,
        "roofline_fraction": result.roofline_fraction,
        "performance_measured": result.performance_measured,
        "performance_note": result.performance_note,
        "shapes": [s.to_dict() for s in result.shapes],
        "mismatches": result.mismatches,
        "skipped": result.skipped,
        "flags": result.flags,
        "mode": result.mode,
        "device": result.device,
        "wall_s": round(result.wall_s, 3),
        "phases": {name: round(seconds, 3) for name, seconds in result.phases.items()},
    }


class RecordFile:
    """A journal of records: every record so far, rewritten atomically after each one (one
    JSON object a line for a ``.jsonl`` path, a JSON list otherwise), so a command stopped
    half-way leaves a complete file (``geak-core eval``'s and ``tune``'s ``-o/--out``, the
    judge's tools' journals). Each record is encoded once, when it is added: the n-th rewrite
    costs a write of the file, not n encodings. ``keep``: the records the file holds already
    stay in it (a line that does not parse, a file cut short, is dropped), so a journal
    reopened on the same folder adds to it."""

    def __init__(self, path: str, keep: bool = False) -> None:
        self.path = path
        self._texts: list[str] = []
        if keep:
            for record in _read_records(Path(path)):
                self.add(record)

    def add(self, record: dict[str, Any]) -> None:
        if self.path.endswith(".jsonl"):
            self._texts.append(json.dumps(record, default=str) + "\n")
        else:  # as json.dumps(records, indent=2) lays out each element of a list
            self._texts.append(textwrap.indent(json.dumps(record, indent=2, default=str), "  "))

    def write(self) -> None:
        if self.path.endswith(".jsonl"):
            text = "".join(self._texts)
        else:
            text = ("[\n" + ",\n".join(self._texts) + "\n]" if self._texts else "[]") + "\n"
        atomic_write(self.path, text)


def _read_records(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    if text.lstrip().startswith("["):
        try:
            return list(json.loads(text))
        except json.JSONDecodeError:
            return []
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
