"""Keeps a task's own code (or a near copy of it) out of its one-shot example.

A task's code is its reference file (``Task.reference``) and, where the suite
times candidates against a published original (``Task.timing_baseline``, the
ROCm suite's ``baseline``), that original too; both are read as text, never
imported, without their module docstring. An entry is contaminated for a
task when any of these holds against either code:

* **overlap**: of the shingles (runs of 8 consecutive Python tokens,
  comments and module docstring left out) of the task's code, the share also
  found in the entry reaches ``threshold``. Measuring containment of the
  task's code (rather than symmetric Jaccard) also catches a crawled file
  that embeds it amid tests and helpers; the symmetric Jaccard is reported
  alongside for the log.
* **similarity**: the Jaccard of 5-token shingles over the retrieval tokens
  (``tokens.token_shingles``, the measure ``geak-core corpus audit``
  reports) exceeds ``similarity_threshold``. These tokens ignore numbers,
  punctuation, keywords and how names are cased or joined, so an edit of
  those alone, which breaks the 8-token shingles, leaves this measure whole.
* **interface**: the entry defines a function with a task entry point's name
  and the same parameter names in the same order (names compared without
  case and underscores). An independent example of the same operation has
  its own names; one with the task's exact interface was made from the task.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from geak_core.api.astutil import parse_source
from geak_core.api.tasks import Task

from geak_retriever_codesim.corpus import CorpusEntry, split_docstring
from geak_retriever_codesim.tokens import code_shingles, jaccard, token_shingles

DEFAULT_THRESHOLD = 0.7
DEFAULT_SIMILARITY_THRESHOLD = 0.4
_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", re.MULTILINE)

Shingles = frozenset[tuple[str, ...]]
Signature = tuple[str, tuple[str, ...]]


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def signatures(code: str) -> set[Signature]:
    """(normalised name, normalised parameter names) of every function defined in ``code``."""
    found: set[Signature] = set()
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
class TaskCode:
    """One text of a task that an example must not give away."""

    role: str  # "reference" (Task.reference) or "original" (Task.timing_baseline)
    path: str
    code: str  # without the module docstring


def task_codes(task: Task) -> list[TaskCode]:
    """The task's reference and original, those whose file exists, read as text. An original
    that defines no function (a stand-in module that only says why the original is missing)
    is left out: there is nothing in it to give away."""
    found = []
    for role, path in (("reference", task.reference), ("original", task.timing_baseline)):
        if path and Path(path).is_file():
            code = split_docstring(Path(path).read_text(encoding="utf-8", errors="replace"))[1]
            if role == "reference" or _DEF.search(code):
                found.append(TaskCode(role, path, code))
    return found


class Fingerprint:
    """What the guard compares of a corpus entry, each part computed on first use and kept:
    the audit reads only the token shingles of every entry, retrieval all three parts of
    the few entries its ranking reaches."""

    def __init__(self, code: str):
        self.code = code

    @cached_property
    def lexeme_shingles(self) -> Shingles:
        return frozenset(code_shingles(self.code))

    @cached_property
    def token_shingles(self) -> Shingles:
        return frozenset(token_shingles(self.code))

    @cached_property
    def signatures(self) -> frozenset[Signature]:
        return frozenset(signatures(self.code))


@dataclass(frozen=True)
class Verdict:
    contaminated: bool
    overlap: float  # highest share of a task code's 8-token shingles found in the entry
    jaccard: float  # symmetric Jaccard of those shingles, for the same task code
    similarity: float = 0.0  # highest 5-token shingle Jaccard with a task code (the audit's)
    reason: str = ""


class ContaminationGuard:
    """Judges corpus entries against one task's code and entry points."""

    def __init__(
        self,
        task: Task,
        threshold: float = DEFAULT_THRESHOLD,
        similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD,
    ):
        self.task = task
        self.threshold = threshold
        self.similarity_threshold = similarity_threshold
        self.codes = task_codes(task)
        self._lexemes = [(c.role, frozenset(code_shingles(c.code))) for c in self.codes]
        self._tokens = [(c.role, frozenset(token_shingles(c.code))) for c in self.codes]
        self._interfaces = {
            (_norm(e.name), tuple(_norm(p) for p in e.params))
            for e in task.entry_points
            if e.params
        }

    def judge(self, entry: CorpusEntry, fingerprint: Fingerprint | None = None) -> Verdict:
        """``fingerprint``: the entry's, when the caller has it cached."""
        mine = fingerprint or Fingerprint(entry.code)
        overlap = jac = similarity = 0.0
        overlap_role = similar_role = ""
        for role, theirs in self._lexemes:
            if not theirs:
                continue
            common = len(theirs & mine.lexeme_shingles)
            if common / len(theirs) > overlap or not overlap_role:
                overlap, overlap_role = common / len(theirs), role
                union = len(theirs | mine.lexeme_shingles)
                jac = common / union if union else 0.0
        for role, theirs in self._tokens:
            value = jaccard(theirs, mine.token_shingles)
            if value > similarity or not similar_role:
                similarity, similar_role = value, role
        found = Verdict(False, overlap, jac, similarity)
        if overlap_role and overlap >= self.threshold:
            reason = f"shares {overlap:.0%} of the {overlap_role}'s shingles"
        elif similar_role and similarity > self.similarity_threshold:
            reason = (
                f"5-token Jaccard {similarity:.2f} with the task's {similar_role} exceeds "
                f"{self.similarity_threshold}"
            )
        elif clash := self._interfaces & mine.signatures:
            reason = f"defines entry point {next(iter(clash))[0]!r} with the task's parameters"
        else:
            return found
        return Verdict(True, overlap, jac, similarity, reason)
