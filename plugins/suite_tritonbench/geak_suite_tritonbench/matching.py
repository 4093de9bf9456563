"""Which task a record of another system's outputs belongs to.

TritonBench's ``LLM_generated`` files identify a task only by ``label``: the
reference code. We match it against each task's reference text in three
steps, the first that succeeds wins:

1. equality after normalising whitespace (line endings, trailing blanks,
   empty lines);
2. containment either way (the original scripts matched by substring), for
   texts at least ``MIN_CONTAINED_RATIO`` as long as each other; when several
   tasks qualify, the one whose text is closest in length;
3. the best token overlap (shared tokens over the larger token count), if it
   reaches ``threshold``; this finds labels taken from the original release
   when the tasks come from the revised one (headers added, kernels fixed).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

DEFAULT_THRESHOLD = 0.6
MIN_CONTAINED_RATIO = 0.3  # a fragment much shorter than every task's text identifies none
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9_]")


def normalise(text: str) -> str:
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text))


def overlap(a: Counter[str], b: Counter[str]) -> float:
    larger = max(sum(a.values()), sum(b.values()))
    if not larger:
        return 0.0
    return sum((a & b).values()) / larger


@dataclass
class _Entry:
    task_id: str
    texts: list[str]  # normalised reference texts (kernel part, whole file, JSON output)
    counts: Counter[str] = field(default_factory=Counter)


class LabelMatcher:
    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.threshold = threshold
        self._entries: list[_Entry] = []

    def add(self, task_id: str, *texts: str) -> None:
        normalised = [normalise(t) for t in texts if t and t.strip()]
        if normalised:
            self._entries.append(_Entry(task_id, normalised, tokens(normalised[0])))

    def match(self, label: str) -> str | None:
        wanted = normalise(label)
        if not wanted:
            return None
        for entry in self._entries:
            if wanted in entry.texts:
                return entry.task_id
        contained: list[tuple[float, str]] = []
        for entry in self._entries:
            for text in entry.texts:
                if wanted in text or text in wanted:
                    ratio = min(len(wanted), len(text)) / max(len(wanted), len(text))
                    if ratio >= MIN_CONTAINED_RATIO:
                        contained.append((ratio, entry.task_id))
        if contained:
            return max(contained)[1]
        counts = tokens(wanted)
        best = max(
            ((overlap(counts, e.counts), e.task_id) for e in self._entries),
            default=(0.0, None),
        )
        return best[1] if best[0] >= self.threshold else None
