"""How close each corpus entry comes to benchmark tasks: what ``geak-core corpus audit`` reports.

Every entry is compared with every task's code (its reference and, where the
suite times against one, its original; ``contamination.task_codes``) in two
ways:

* **similarity**: the Jaccard of 5-token shingles over the retrieval tokens
  (``tokens.token_shingles``), the measure the retriever's
  ``similarity_threshold`` applies at retrieval time, so that an entry the
  audit reports above the threshold for a task is exactly one the retriever
  never gives that task;
* **score**: the retriever's own score for the entry when the task asks with
  that code (the query of a lineage whose latest code it is, in the
  retriever's ``query`` mode): how strongly the ranking pulls the entry
  towards the task.

Per entry, suite and kind of code the highest of each is kept, with its task
(none when it is 0).
The similarity is counted through an index from shingle to entries, so a task
costs the entries it shares shingles with, not the whole corpus.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from geak_core.api.components import Closest, CorpusAudit, EntryAudit, Excess, RetrievalQuery
from geak_core.api.tasks import Task

from geak_retriever_codesim.contamination import task_codes
from geak_retriever_codesim.tokens import token_shingles

if TYPE_CHECKING:
    from geak_retriever_codesim.retriever import CodeSimRetriever

MEASURE = "Jaccard of 5-token shingles of the retrieval tokens (comments left out)"


def audit_corpus(
    retriever: CodeSimRetriever,
    tasks: Sequence[Task],
    progress: Callable[[int, int], None] | None = None,
) -> CorpusAudit:
    threshold = retriever.options.similarity_threshold
    sizes = [len(retriever.fingerprint(i).token_shingles) for i in range(len(retriever.entries))]
    holders: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i in range(len(retriever.entries)):
        for shingle in retriever.fingerprint(i).token_shingles:
            holders[shingle].append(i)

    # per entry: ("suite", "against") -> [similarity, its task, score, its task]
    best: list[dict[tuple[str, str], list]] = [{} for _ in retriever.entries]
    compared: dict[str, int] = defaultdict(int)
    exceeding: list[Excess] = []
    for done, task in enumerate(tasks, start=1):
        for code in task_codes(task):
            compared[f"{task.suite} {code.role}"] += 1
            theirs = token_shingles(code.code)
            shared: dict[int, int] = defaultdict(int)
            for shingle in theirs:
                for i in holders.get(shingle, ()):
                    shared[i] += 1
            scores = retriever.scores(RetrievalQuery(task=task, code=code.code))
            for i, score in enumerate(scores):
                common = shared.get(i, 0)
                union = len(theirs) + sizes[i] - common
                similarity = common / union if union else 0.0
                slot = best[i].setdefault((task.suite, code.role), [0.0, "", 0.0, ""])
                if similarity > slot[0]:
                    slot[0], slot[1] = similarity, task.id
                if score > slot[2]:
                    slot[2], slot[3] = score, task.id
                if similarity > threshold:
                    exceeding.append(
                        Excess(retriever.entries[i].id, task.key, code.role, round(similarity, 4))
                    )
        if progress is not None:
            progress(done, len(tasks))

    rows = [
        EntryAudit(
            entry.id,
            [
                Closest(suite, against, round(v[0], 4), v[1], round(v[2], 4), v[3])
                for (suite, against), v in sorted(best[i].items())
            ],
        )
        for i, entry in enumerate(retriever.entries)
    ]
    exceeding.sort(key=lambda e: (-e.similarity, e.entry, e.task))
    return CorpusAudit(MEASURE, threshold, dict(compared), rows, exceeding)
