"""Okapi BM25 over token lists: how ``codesim`` ranks its corpus.

Written out here (about forty lines) rather than taken from a package: the
corpus is small, the formula is standard, and owning it keeps the scores
explainable in the run log.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


class BM25:
    """Scores every document of a fixed collection against a query.

    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative, so a
    term found in most documents still counts a little) and the usual
    saturation ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``; a query
    term counted ``q`` times weighs ``q * (k3 + 1) / (q + k3)`` (1 once, under 2 ever).
    """

    def __init__(
        self, documents: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, k3: float = 1.0
    ):
        self.k1 = k1
        self.b = b
        self.k3 = k3
        self._tfs = [Counter(doc) for doc in documents]
        self._lengths = [len(doc) for doc in documents]
        self._avglen = (sum(self._lengths) / len(self._lengths)) if documents else 0.0
        df: Counter[str] = Counter()
        for tf in self._tfs:
            df.update(tf.keys())
        n = len(documents)
        self._idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def __len__(self) -> int:
        return len(self._tfs)

    def idf(self, term: str) -> float:
        return self._idf.get(term, 0.0)

    def scores(self, query: Sequence[str]) -> list[float]:
        """One score per document, in collection order. A term repeated in the query weighs
        more, saturating like document terms do (``k3``): what a task is about tends to be
        said more than once, but one word said ten times must not drown the rest."""
        counts = Counter(t for t in query if t in self._idf)
        terms = {t: q * (self.k3 + 1.0) / (q + self.k3) for t, q in counts.items()}
        out: list[float] = []
        for tf, length in zip(self._tfs, self._lengths, strict=True):
            norm = (
                self.k1 * (1.0 - self.b + self.b * length / self._avglen) if self._avglen else 0.0
            )
            score = 0.0
            for term, times in terms.items():
                f = tf.get(term, 0)
                if f:
                    score += times * self._idf[term] * f * (self.k1 + 1.0) / (f + norm)
            out.append(score)
        return out
