"""The ``codesim`` retriever: one-shot examples ranked by code similarity.

Before a lineage has code, the query is the task's instruction (with its
entry-point names and docs); afterwards it is the lineage's latest code,
which GEAK found to retrieve better examples. Both sides go through the same
code-aware tokenizer and are ranked by BM25 over each entry's description
and code. Entries the contamination guard flags for the task are never
returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.api.components import CorpusAudit, Example, RetrievalQuery, RetrieverBase
from geak_core.api.errors import InputError
from geak_core.api.tasks import Task

from geak_retriever_codesim.audit import audit_corpus
from geak_retriever_codesim.bm25 import BM25
from geak_retriever_codesim.contamination import (
    DEFAULT_SIMILARITY_THRESHOLD,
    DEFAULT_THRESHOLD,
    ContaminationGuard,
    Fingerprint,
    Verdict,
)
from geak_retriever_codesim.corpus import (
    DEFAULT_CODE_FIELDS,
    DEFAULT_DESCRIPTION_FIELDS,
    CorpusEntry,
    load_builtin,
    load_corpus,
    load_tritonbench_train,
    tritonbench_train_files,
)
from geak_retriever_codesim.tokens import tokenize

QUERY_MODES = ("instruction_then_code", "instruction", "code")
SECONDARY_WEIGHT = 0.5
INSTRUCTION_WEIGHT = 0.5  # of the instruction's score, in "instruction_then_code" code queries
_LEAD = re.compile(r".+?(?:\.(?=\s)|\n|$)", re.DOTALL)
_DEF_NAME = re.compile(r"^\s*def\s+([A-Za-z_]\w*)", re.MULTILINE)


@dataclass
class CodeSimOptions:
    """Recipe keys of ``[retriever]`` when ``name = "codesim"``."""

    top_k: int = 1
    query: str = field(default="instruction_then_code", metadata={"choices": list(QUERY_MODES)})
    corpora: list[str] = field(default_factory=list)
    include_builtin: bool = True
    tritonbench_train: str = field(
        default="",
        metadata={
            "path": True,
            "help": "TritonBench's training set, searched with the other corpora: its data/ "
            "folder (or the checkout) holding train_crawl.json and train_synth.json, or one of "
            "those files",
        },
    )
    contamination_threshold: float = DEFAULT_THRESHOLD
    similarity_threshold: float = field(
        default=DEFAULT_SIMILARITY_THRESHOLD,
        metadata={
            "help": "5-token shingle Jaccard with a task's reference or original above which an "
            "entry is never retrieved for that task (what geak-core corpus audit reports)"
        },
    )
    code_fields: list[str] = field(default_factory=lambda: list(DEFAULT_CODE_FIELDS))
    description_fields: list[str] = field(default_factory=lambda: list(DEFAULT_DESCRIPTION_FIELDS))

    def __post_init__(self) -> None:  # runs when the recipe is validated, before any work
        _check(self)


@dataclass(frozen=True)
class Ranked:
    """One corpus entry's standing for one query (what ``explain`` reports)."""

    entry: CorpusEntry
    score: float
    verdict: Verdict


def instruction_text(task: Task) -> str:
    """What an instruction query says: the instruction and the entry points' names and docs.

    The lead sentence appears twice: instructions state the operation first and the
    launch contract (grids, dtypes, masking) after, and the operation is what an example
    should share.
    """
    lead = _LEAD.match(task.instruction.strip())
    parts = [lead.group(0) if lead else "", task.instruction]
    parts += [f"{e.name} {e.doc}" for e in task.entry_points]
    return "\n".join(parts)


def _check(options: CodeSimOptions) -> None:
    if options.top_k < 1:
        raise InputError(f"retriever.top_k must be at least 1, got {options.top_k}")
    if options.query not in QUERY_MODES:
        raise InputError(
            f"retriever.query {options.query!r} is not one of {', '.join(QUERY_MODES)}"
        )
    if not 0.0 < options.contamination_threshold <= 1.0:
        raise InputError(
            "retriever.contamination_threshold must lie in (0, 1], "
            f"got {options.contamination_threshold}"
        )
    if not 0.0 < options.similarity_threshold <= 1.0:
        raise InputError(
            f"retriever.similarity_threshold must lie in (0, 1], got {options.similarity_threshold}"
        )
    if not options.code_fields:
        raise InputError("retriever.code_fields must name at least one field")
    if options.tritonbench_train:
        try:
            tritonbench_train_files(Path(options.tritonbench_train).expanduser())
        except InputError as exc:
            raise InputError(f"retriever.tritonbench_train: {exc}") from exc


class CodeSimRetriever(RetrieverBase):
    def __init__(self, options: CodeSimOptions | None = None):
        self.options = options or CodeSimOptions()
        entries: list[CorpusEntry] = load_builtin() if self.options.include_builtin else []
        for i, raw in enumerate(self.options.corpora):
            try:
                entries += load_corpus(
                    Path(raw).expanduser(),
                    tuple(self.options.code_fields),
                    tuple(self.options.description_fields),
                )
            except InputError as exc:
                raise InputError(f"retriever.corpora[{i}]: {exc}") from exc
        if self.options.tritonbench_train:
            try:
                entries += load_tritonbench_train(
                    Path(self.options.tritonbench_train).expanduser(),
                    tuple(self.options.code_fields),
                    tuple(self.options.description_fields),
                )
            except InputError as exc:
                raise InputError(f"retriever.tritonbench_train: {exc}") from exc
        self.entries = _unique_ids(entries)
        # Two fields: what an entry says it does (description and function names) and its
        # code. Instruction queries lean on the first, code queries on the second.
        self._text = BM25(
            [tokenize(e.description + "\n" + _def_names(e.code)) for e in self.entries]
        )
        self._code = BM25([tokenize(e.code) for e in self.entries])
        self._guards: dict[str, ContaminationGuard] = {}
        self._fingerprints: dict[int, Fingerprint] = {}
        self._verdicts: dict[tuple[str, int], Verdict] = {}

    @staticmethod
    def _task_key(task: Task) -> str:
        return f"{task.key}\0{task.reference}\0{task.timing_baseline}"

    def _guard(self, task: Task) -> ContaminationGuard:
        key = self._task_key(task)
        if key not in self._guards:
            self._guards[key] = ContaminationGuard(
                task, self.options.contamination_threshold, self.options.similarity_threshold
            )
        return self._guards[key]

    def fingerprint(self, index: int) -> Fingerprint:
        """The guard's view of entry ``index`` (its parts computed on first use)."""
        if index not in self._fingerprints:
            self._fingerprints[index] = Fingerprint(self.entries[index].code)
        return self._fingerprints[index]

    def query_kind(self, query: RetrievalQuery) -> str:
        """What the query ranks by: "instruction", "code" or "code+instruction".

        Modes "code" and "instruction_then_code" fall back to the instruction while a
        lineage has no code yet (there is nothing else to ask with).
        """
        has_code = bool(query.code and query.code.strip())
        if self.options.query == "instruction" or not has_code:
            return "instruction"
        return "code" if self.options.query == "code" else "code+instruction"

    def _field_scores(self, text: str, primary: BM25, secondary: BM25) -> list[float]:
        tokens = tokenize(text)
        return [
            p + SECONDARY_WEIGHT * s
            for p, s in zip(primary.scores(tokens), secondary.scores(tokens), strict=True)
        ]

    def scores(self, query: RetrievalQuery) -> list[float]:
        """One score per entry.

        An instruction ranks against the text field (plus half the code field), code
        against the code field (plus half the text field). "code+instruction" adds half
        the instruction's score to the code's: the code decides, the task's own words
        keep variable names (``offsets``, ``mask``) from deciding alone.
        """
        kind = self.query_kind(query)
        instruction = instruction_text(query.task)
        if kind == "instruction":
            return self._field_scores(instruction, self._text, self._code)
        assert query.code is not None
        by_code = self._field_scores(query.code, self._code, self._text)
        if kind == "code":
            return by_code
        by_instruction = self._field_scores(instruction, self._text, self._code)
        return [c + INSTRUCTION_WEIGHT * i for c, i in zip(by_code, by_instruction, strict=True)]

    def _verdict(self, task: Task, index: int) -> Verdict:
        key = (self._task_key(task), index)
        if key not in self._verdicts:
            guard = self._guard(task)
            self._verdicts[key] = guard.judge(self.entries[index], self.fingerprint(index))
        return self._verdicts[key]

    def ranking(self, query: RetrievalQuery) -> Iterator[Ranked]:
        """Entries with a positive score, best first (ties: corpus order), each with its
        verdict; lazy, so a large corpus is only judged as far as it is read."""
        scores = self.scores(query)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        for i in order:
            if scores[i] <= 0.0:
                return
            yield Ranked(self.entries[i], scores[i], self._verdict(query.task, i))

    def audit(
        self, tasks: Sequence[Task], progress: Callable[[int, int], None] | None = None
    ) -> CorpusAudit:
        """Every entry's similarity and score against each task's code (``audit.py``)."""
        return audit_corpus(self, tasks, progress)

    def retrieve(self, query: RetrievalQuery) -> list[Example]:
        """The best ``max(top_k, query.k)`` uncontaminated entries."""
        wanted = max(self.options.top_k, query.k)
        examples: list[Example] = []
        for ranked in self.ranking(query):
            if ranked.verdict.contaminated:
                continue
            e = ranked.entry
            examples.append(Example(e.id, e.code, e.description, round(ranked.score, 4), e.source))
            if len(examples) == wanted:
                break
        return examples


def _def_names(code: str) -> str:
    return " ".join(_DEF_NAME.findall(code))


def _unique_ids(entries: list[CorpusEntry]) -> list[CorpusEntry]:
    seen: dict[str, int] = {}
    out = []
    for e in entries:
        n = seen.get(e.id, 0)
        seen[e.id] = n + 1
        out.append(e if n == 0 else CorpusEntry(f"{e.id}#{n + 1}", e.code, e.description, e.source))
    return out
