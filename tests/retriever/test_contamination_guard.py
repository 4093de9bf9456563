"""The contamination guard: a task's own reference, or a near copy, is never its example."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core.api.components import RetrievalQuery
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.plugins import get_plugin_manager
from geak_retriever_codesim.contamination import ContaminationGuard, signatures
from geak_retriever_codesim.corpus import CorpusEntry
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

from tests.support.kernels import HINGE_ROWS

# The fixture task's reference: a row-wise "squared hinge" kernel nothing in the corpus does.
REFERENCE = HINGE_ROWS

# The same kernel lightly edited: comments, spacing, one renamed local, plus test code around it.
NEAR_COPY = '''"""Squared hinge loss per row (found in a crawl)."""
import torch
import triton
import triton.language as tl


@triton.jit
def hinge_rows_kernel(score_ptr, label_ptr, loss_ptr, n_cols, stride, margin, BLOCK: tl.constexpr):
    # one program per row
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    score = tl.load(score_ptr + row * stride + cols, mask=ok, other=0.0).to(tl.float32)
    label = tl.load(label_ptr + row * stride + cols, mask=ok, other=0.0).to(tl.float32)
    gap = tl.maximum(margin - label * score,   0.0)
    tl.store(loss_ptr + row, tl.sum(gap * gap, axis=0) / n_cols)


def test_hinge():
    s = torch.randn(4, 8); y = torch.sign(torch.randn(4, 8))
    out = torch.empty(4)
    hinge_rows_kernel[(4,)](s, y, out, 8, 8, 1.0, BLOCK=8)
    return out
'''

# An independent kernel of the same operation: own names, own structure.
INDEPENDENT = '''"""Mean squared hinge loss of each row, computed chunk by chunk for long rows."""
import triton
import triton.language as tl


@triton.jit
def squared_hinge_loss_kernel(logits, targets, out, width, row_stride, margin, CHUNK: tl.constexpr):
    r = tl.program_id(0)
    total = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, width, CHUNK):
        idx = start + tl.arange(0, CHUNK)
        inside = idx < width
        z = tl.load(logits + r * row_stride + idx, mask=inside, other=0.0)
        t = tl.load(targets + r * row_stride + idx, mask=inside, other=0.0)
        h = tl.where(inside, tl.maximum(0.0, margin - z * t), 0.0)
        total += h * h
    tl.store(out + r, tl.sum(total, axis=0) / width)
'''

# Different code, but the task's exact interface: made from the task.
SAME_INTERFACE = '''"""A row-wise hinge loss kernel."""
import triton
import triton.language as tl


@triton.jit
def hinge_rows_kernel(score_ptr, label_ptr, loss_ptr, n_cols, stride, margin, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    acc = 0.0
    for c in range(0, n_cols):
        v = tl.load(score_ptr + r * stride + c)
        acc += v
    tl.store(loss_ptr + r, acc)
'''

INSTRUCTION = (
    "Write a Triton kernel `hinge_rows_kernel` computing the mean squared hinge loss of each "
    "row: loss[r] = mean over columns of max(margin - label * score, 0) squared."
)


@pytest.fixture
def fixture_task(tmp_path: Path) -> Task:
    reference = tmp_path / "reference" / "hinge_rows.py"
    reference.parent.mkdir()
    reference.write_text(REFERENCE)
    return Task(
        suite="fixture",
        id="hinge_rows",
        instruction=INSTRUCTION,
        entry_points=[
            EntryPoint(
                "hinge_rows_kernel",
                params=(
                    "score_ptr",
                    "label_ptr",
                    "loss_ptr",
                    "n_cols",
                    "stride",
                    "margin",
                    "BLOCK",
                ),
                constexpr=("BLOCK",),
            )
        ],
        harness="",
        reference=str(reference),
    )


def rocm_tasks() -> list[Task]:
    return get_plugin_manager().build("suite", "rocm").tasks()


def corpus_folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def entry(code: str) -> CorpusEntry:
    return CorpusEntry("x:y", code, "", "")


def test_a_planted_near_copy_is_never_retrieved_for_its_task(
    fixture_task: Task, tmp_path: Path
) -> None:
    folder = corpus_folder(tmp_path, planted=NEAR_COPY, independent=INDEPENDENT)
    retriever = CodeSimRetriever(CodeSimOptions(corpora=[str(folder)], top_k=3))
    ranking = list(retriever.ranking(RetrievalQuery(task=fixture_task)))
    assert ranking[0].entry.id == "corpus:planted"  # it would have been the best match
    assert ranking[0].verdict.contaminated
    examples = retriever.retrieve(RetrievalQuery(task=fixture_task))
    assert "corpus:planted" not in [e.id for e in examples]
    assert examples[0].id == "corpus:independent"


def test_the_near_copy_is_excluded_for_code_queries_too(fixture_task: Task, tmp_path: Path) -> None:
    folder = corpus_folder(tmp_path, planted=NEAR_COPY, independent=INDEPENDENT)
    retriever = CodeSimRetriever(CodeSimOptions(corpora=[str(folder)], include_builtin=False))
    query = RetrievalQuery(task=fixture_task, code=REFERENCE)
    assert [e.id for e in retriever.retrieve(query)] == ["corpus:independent"]


def test_the_near_copy_is_retrievable_for_other_tasks(fixture_task: Task, tmp_path: Path) -> None:
    folder = corpus_folder(tmp_path, planted=NEAR_COPY)
    retriever = CodeSimRetriever(CodeSimOptions(corpora=[str(folder)], include_builtin=False))
    other = Task(suite="fixture", id="other", instruction=INSTRUCTION, entry_points=[], harness="")
    assert [e.id for e in retriever.retrieve(RetrievalQuery(task=other))] == ["corpus:planted"]


def test_overlap_is_the_share_of_reference_shingles_found_in_the_entry(fixture_task: Task) -> None:
    guard = ContaminationGuard(fixture_task)
    copy = guard.judge(entry(NEAR_COPY))
    assert copy.contaminated and copy.overlap >= 0.7
    assert copy.jaccard < copy.overlap  # the test code around the copy dilutes Jaccard only
    assert guard.judge(entry(REFERENCE)).overlap == 1.0
    independent = guard.judge(entry(INDEPENDENT))
    assert not independent.contaminated and independent.overlap < 0.3


def test_an_entry_with_the_task_interface_is_contaminated_whatever_its_code(
    fixture_task: Task,
) -> None:
    verdict = ContaminationGuard(fixture_task).judge(entry(SAME_INTERFACE))
    assert verdict.contaminated
    assert "entry point" in verdict.reason and verdict.overlap < 0.7


def test_the_same_name_with_other_parameters_is_not_an_interface_match(fixture_task: Task) -> None:
    renamed = SAME_INTERFACE.replace("margin, BLOCK", "BLOCK")
    assert not ContaminationGuard(fixture_task).judge(entry(renamed)).contaminated


def test_higher_thresholds_let_partial_overlaps_through(fixture_task: Task) -> None:
    copy = entry(NEAR_COPY.replace("hinge_rows_kernel", "row_hinge"))  # interface rule aside
    overlap = ContaminationGuard(fixture_task).judge(copy).overlap
    assert 0.7 <= overlap < 1.0
    relaxed = ContaminationGuard(fixture_task, threshold=1.0, similarity_threshold=1.0)
    assert not relaxed.judge(copy).contaminated
    # with the overlap rule relaxed alone, the 5-token similarity still recognises the copy
    verdict = ContaminationGuard(fixture_task, threshold=1.0).judge(copy)
    assert verdict.contaminated and verdict.reason.startswith("5-token Jaccard")


def test_without_a_reference_file_only_the_interface_rule_applies(fixture_task: Task) -> None:
    fixture_task.reference = "/nonexistent/reference.py"
    guard = ContaminationGuard(fixture_task)
    assert not guard.judge(entry(REFERENCE.replace("margin, BLOCK", "m, BLOCK"))).contaminated
    assert guard.judge(entry(REFERENCE)).contaminated  # same interface


def test_the_reference_is_read_as_text_never_imported(fixture_task: Task) -> None:
    Path(fixture_task.reference).write_text("raise SystemExit('imported')\n" + REFERENCE)
    assert ContaminationGuard(fixture_task).judge(entry(NEAR_COPY)).contaminated


def test_signatures_survive_code_that_does_not_parse() -> None:
    broken = "def kern(a_ptr, B: tl.constexpr = 4):\n    x = (\n"
    assert signatures(broken) == {("kern", ("aptr", "b"))}


def test_no_rocm_task_retrieves_its_own_reference(tmp_path: Path) -> None:
    tasks = [t for t in rocm_tasks() if Path(t.reference).is_file()]
    assert len(tasks) == 31
    folder = tmp_path / "planted"
    folder.mkdir()
    for t in tasks:  # every reference, planted under another name
        (folder / f"copy_of_{t.id}.py").write_text(Path(t.reference).read_text())
    retriever = CodeSimRetriever(CodeSimOptions(corpora=[str(folder)], top_k=5))
    for t in tasks:
        own = f"planted:copy_of_{t.id}"
        for query in (
            RetrievalQuery(task=t),
            RetrievalQuery(task=t, code=Path(t.reference).read_text()),
        ):
            assert own not in [e.id for e in retriever.retrieve(query)], t.id
            ranked = {r.entry.id: r for r in retriever.ranking(query)}
            assert ranked[own].verdict.overlap == 1.0, t.id  # found, and known for a copy
