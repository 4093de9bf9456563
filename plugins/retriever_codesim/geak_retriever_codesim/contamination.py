"""Keeps a task's own reference (or a near copy of it) out of its one-shot example.

An entry is contaminated for a task when either holds:

* **overlap**: of the shingles (runs of 8 consecutive Python tokens, comments
  and module docstring left out) of the task's reference file
  (``Task.reference``), the share also found in the entry reaches the
  threshold. Measuring containment of the reference (rather than symmetric
  Jaccard) also catches a crawled file that embeds the reference amid tests
  and helpers; the symmetric Jaccard is reported alongside for the log.
* **interface**: the entry defines a function with a task entry point's name
  and the same parameter names in the same order (names compared without
  case and underscores). An independent example of the same operation has
  its own names; one with the task's exact interface was made from the task.

The reference is read only as text, never imported.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from geak_core.astutil import parse_source
from geak_core.tasks import Task

from geak_retriever_codesim.corpus import CorpusEntry, split_docstring
from geak_retriever_codesim.tokens import code_shingles

DEFAULT_THRESHOLD = 0.7
_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", re.MULTILINE)


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def signatures(code: str) -> set[tuple[str, tuple[str, ...]]]:
    """(normalised name, normalised parameter names) of every function defined in ``code``."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    try:
        tree = parse_source(code)
    except SyntaxError:  # crawled code may not parse; fall back to a regex over `def` lines
        for name, params in _DEF.findall(code):
            names = [p.split(":")[0].split("=")[0].strip() for p in params.split(",")]
            found.add((_norm(name), tuple(_norm(p) for p in names if p and p != "*")))
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            found.add((_norm(node.name), tuple(_norm(a.arg) for a in args)))
    return found


@dataclass(frozen=True)
class Verdict:
    contaminated: bool
    overlap: float  # share of the reference's shingles found in the entry
    jaccard: float
    reason: str = ""


class ContaminationGuard:
    """Judges corpus entries against one task's reference and entry points."""

    def __init__(self, task: Task, threshold: float = DEFAULT_THRESHOLD):
        self.task = task
        self.threshold = threshold
        self.reference_code = self._read_reference(task)
        self._ref_shingles = code_shingles(self.reference_code) if self.reference_code else set()
        self._interfaces = {
            (_norm(e.name), tuple(_norm(p) for p in e.params))
            for e in task.entry_points
            if e.params
        }

    @staticmethod
    def _read_reference(task: Task) -> str:
        if not task.reference:
            return ""
        path = Path(task.reference)
        if not path.is_file():
            return ""
        # Corpus entries are compared without their module docstring; so is the reference.
        return split_docstring(path.read_text(encoding="utf-8", errors="replace"))[1]

    def judge(
        self, entry: CorpusEntry, entry_shingles: set[tuple[str, ...]] | None = None
    ) -> Verdict:
        """``entry_shingles``: the entry's code shingles when the caller has them cached."""
        overlap = jaccard = 0.0
        if self._ref_shingles:
            mine = code_shingles(entry.code) if entry_shingles is None else entry_shingles
            common = len(self._ref_shingles & mine)
            overlap = common / len(self._ref_shingles)
            union = len(self._ref_shingles | mine)
            jaccard = common / union if union else 0.0
            if overlap >= self.threshold:
                return Verdict(
                    True, overlap, jaccard, f"shares {overlap:.0%} of the reference's shingles"
                )
        clash = self._interfaces & signatures(entry.code)
        if clash:
            name = next(iter(clash))[0]
            return Verdict(
                True, overlap, jaccard, f"defines entry point {name!r} with the task's parameters"
            )
        return Verdict(False, overlap, jaccard)
