"""Which task a record of another system's outputs belongs to.

TritonBench's ``LLM_generated`` files identify a task only by ``label``: the
reference code, sometimes cut short (the coder-model files hold the first few
thousand characters) and sometimes ending in the model's end-of-turn marker
(``<|im_end|>``, ``<|EOT|>``, which the original scripts remove too). We
match it against the reference texts of every task of the data, usable or
not: a label naming a task the suite cannot judge must find that task, never
the most similar other one. The first step that succeeds wins:

1. equality after normalising whitespace (line endings, trailing blanks,
   empty lines) and removing end-of-turn markers;
2. containment (the original scripts matched by substring): the label inside
   a task's text (a fragment of at least ``MIN_FRAGMENT_TOKENS`` tokens,
   whatever its share of the text), or a task's text inside the label (at
   least ``MIN_CONTAINED_RATIO`` of it). When several tasks qualify (two
   tasks whose code starts alike, and a label cut before they differ), the
   record's instruction decides: the task whose instruction text it contains;
   failing that, the task whose text is closest in length;
3. the best token overlap (shared tokens over the larger token count), if it
   reaches ``threshold``; this finds labels taken from the original release
   when the tasks come from the revised one (headers added, kernels fixed).
   A label of at least ``MIN_FRAGMENT_TOKENS`` tokens is also scored against
   each task's first tokens, as many as the label has, so that a label cut
   short is compared with the same stretch of code. Tasks scoring within
   ``CLOSE_SCORES`` of the best (near-copies of one another, such as two
   attention kernels that differ in a few lines) are told apart by the
   similarity of the token sequences, order included.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher

DEFAULT_THRESHOLD = 0.6
MIN_CONTAINED_RATIO = 0.3  # a task's text inside a label much longer than it identifies none
MIN_FRAGMENT_TOKENS = 40  # a label inside a task's text: shorter fragments ("import torch") are common
CLOSE_SCORES = 0.05  # token-overlap scores this close are decided by sequence similarity
END_MARKERS = ("<|im_end|>", "<|EOT|>", "<|endoftext|>", "<|eot_id|>")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9_]")


def normalise(text: str) -> str:
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def normalise_label(text: str) -> str:
    for marker in END_MARKERS:
        text = text.replace(marker, "")
    return normalise(text)


def tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text))


def overlap(a: Counter[str], b: Counter[str]) -> float:
    larger = max(sum(a.values()), sum(b.values()))
    if not larger:
        return 0.0
    return sum((a & b).values()) / larger


def _similarity(label: list[str], text: list[str]) -> float:
    """Similarity of two token sequences, order included; like ``_Entry.score``, a label of
    a fragment's length is also compared with as many first tokens of the text."""
    whole = SequenceMatcher(None, label, text, autojunk=False).ratio()
    if len(label) < MIN_FRAGMENT_TOKENS or len(label) >= len(text):
        return whole
    start = SequenceMatcher(None, label, text[: len(label)], autojunk=False).ratio()
    return max(whole, start)


@dataclass
class _Entry:
    task_id: str
    texts: list[str]  # normalised reference texts (kernel part, whole file, JSON output)
    instructions: list[str] = field(default_factory=list)  # normalised instruction texts
    sequence: list[str] = field(default_factory=list)  # tokens of the first text, in order
    counts: Counter[str] = field(default_factory=Counter)

    def score(self, counts: Counter[str], size: int) -> float:
        """Token overlap with the whole text, or with its first ``size`` tokens if higher."""
        whole = overlap(counts, self.counts)
        if size < MIN_FRAGMENT_TOKENS or size >= len(self.sequence):
            return whole
        return max(whole, overlap(counts, Counter(self.sequence[:size])))


class LabelMatcher:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._entries: list[_Entry] = []

    def add(self, task_id: str, *texts: str, instructions: tuple[str, ...] = ()) -> None:
        normalised = [normalise(t) for t in texts if t and t.strip()]
        if normalised:
            sequence = _TOKEN.findall(normalised[0])
            self._entries.append(_Entry(
                task_id, normalised,
                [normalise(t) for t in instructions if t and t.strip()],
                sequence, Counter(sequence),
            ))

    def match(self, label: str, hint: str = "") -> str | None:
        """The task ``label`` is the reference code of; ``hint`` (the record's instruction or
        prompt) decides between tasks whose code the label fits equally."""
        wanted = normalise_label(label)
        if not wanted:
            return None
        for entry in self._entries:
            if wanted in entry.texts:
                return entry.task_id
        found = self._contained(wanted, normalise(hint) if hint else "")
        if found:
            return found
        sequence = _TOKEN.findall(wanted)
        counts = Counter(sequence)
        scored = [(e.score(counts, len(sequence)), e) for e in self._entries]
        best = max((score for score, _ in scored), default=0.0)
        if best < self.threshold:
            return None
        close = [e for score, e in scored if score >= best - CLOSE_SCORES]
        if len(close) == 1:
            return close[0].task_id
        return max(close, key=lambda e: _similarity(sequence, e.sequence)).task_id

    def _contained(self, wanted: str, hint: str) -> str | None:
        is_fragment = sum(tokens(wanted).values()) >= MIN_FRAGMENT_TOKENS
        fits: dict[str, float] = {}  # task id -> best length ratio
        for entry in self._entries:
            for text in entry.texts:
                ratio = min(len(wanted), len(text)) / max(len(wanted), len(text))
                if (is_fragment and wanted in text) or (
                    ratio >= MIN_CONTAINED_RATIO and text in wanted
                ):
                    fits[entry.task_id] = max(ratio, fits.get(entry.task_id, 0.0))
        if len(fits) > 1 and hint:
            named = {
                e.task_id for e in self._entries
                if e.task_id in fits and any(i in hint for i in e.instructions)
            }
            if len(named) == 1:
                return named.pop()
        if not fits:
            return None
        return max((ratio, task_id) for task_id, ratio in fits.items())[1]
