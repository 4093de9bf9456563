"""The corpus audit (`geak-core corpus audit`) and the exclusions it stands for at retrieval time.

The built-in corpus is audited against every suite available offline: the ROCm suite (its
references ship with it), the TritonBench and KernelBench-X suites' own test fixtures, and
the real benchmark data wherever GEAK_TRITONBENCH_DATA / GEAK_KERNELBENCHX_DATA point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.api.components import AuditableRetriever, RetrievalQuery
from geak_core.api.tasks import EntryPoint, Task
from geak_core.cli import main
from geak_core.engine.plugins import get_plugin_manager
from geak_retriever_codesim.contamination import (
    DEFAULT_SIMILARITY_THRESHOLD,
    ContaminationGuard,
)
from geak_retriever_codesim.corpus import CorpusEntry
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

from tests.support.kernels import HINGE_ROWS

ROOT = Path(__file__).resolve().parents[2]
TRITONBENCH_FIXTURE = ROOT / "plugins/suite_tritonbench/tests/fixtures/TritonBench/data"
KERNELBENCHX_FIXTURE = ROOT / "plugins/suite_kernelbenchx/tests/fixtures/KernelBenchX"
SEPARATOR = "#" * 146

# A reference nothing in the built-in corpus resembles: row-wise squared hinge loss.
REFERENCE = HINGE_ROWS + """

def hinge_rows(score, label, margin=1.0):
    rows, cols = score.shape
    loss = score.new_empty(rows)
    hinge_rows_kernel[(rows,)](score, label, loss, cols, score.stride(0), margin, BLOCK=1024)
    return loss
"""

# The same code with every number, bracket and operator spacing changed and the kernel's
# parameters renamed in case only: the 8-token shingles (and so the overlap rule) break,
# the retrieval tokens do not.
RETOUCHED = """
import triton
import triton.language as tl


@triton.jit
def hingeRowsKernel(scorePtr, labelPtr, lossPtr, nCols, Stride, Margin, BLOCK: tl.constexpr):
    row = (tl.program_id(0))
    cols = (tl.arange(0, (BLOCK)))
    valid = (cols) < (nCols)
    score = tl.load((scorePtr) + (row) * (Stride) + (cols), mask=(valid), other=(0.)).to(tl.float32)
    label = tl.load((labelPtr) + (row) * (Stride) + (cols), mask=(valid), other=(0.)).to(tl.float32)
    gap = tl.maximum((Margin) - (label) * (score), (0.))
    tl.store((lossPtr) + (row), tl.sum((gap) * (gap), axis=(0)) / (nCols))


def hinge_rows(score, label, margin=(1.)):
    rows, cols = (score.shape)
    loss = (score.new_empty(rows))
    hinge_rows_kernel[((rows),)]((score), (label), (loss), (cols), score.stride((0)), (margin), BLOCK=(2048))
    return (loss)
"""

INSTRUCTION = "Compute the mean squared hinge loss of each row of scores against labels."


def hinge_task(tmp_path: Path, suite: str = "fixture", original: str = "") -> Task:
    reference = tmp_path / f"{suite}_reference.py"
    reference.write_text(REFERENCE)
    baseline = ""
    if original:
        baseline = str(tmp_path / f"{suite}_original.py")
        Path(baseline).write_text(original)
    return Task(
        suite=suite,
        id="hinge_rows",
        instruction=INSTRUCTION,
        entry_points=[EntryPoint("hinge_rows_kernel")],
        harness="",
        reference=str(reference),
        timing_baseline=baseline,
    )


def planted(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "planted"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def offline_tasks() -> list[Task]:
    """Every task the built-in corpus can be retrieved for that this machine has."""
    manager = get_plugin_manager()
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions
    from geak_suite_tritonbench.suite import TritonBenchOptions

    tasks = manager.build("suite", "rocm").tasks()
    tasks += manager.build(
        "suite", "tritonbench", TritonBenchOptions(path=str(TRITONBENCH_FIXTURE))
    ).tasks()
    tasks += manager.build(
        "suite", "kernelbenchx", KernelBenchXOptions(path=str(KERNELBENCHX_FIXTURE))
    ).tasks()
    if os.environ.get("GEAK_TRITONBENCH_DATA"):
        tasks += manager.build("suite", "tritonbench").tasks()
    if os.environ.get("GEAK_KERNELBENCHX_DATA"):
        tasks += manager.build("suite", "kernelbenchx").tasks()
    return tasks


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))


def test_no_builtin_entry_exceeds_the_threshold_for_any_task_it_can_be_retrieved_for():
    tasks = offline_tasks()
    retriever = CodeSimRetriever()
    audit = retriever.audit(tasks)
    assert audit.threshold == DEFAULT_SIMILARITY_THRESHOLD == 0.4
    assert audit.compared["rocm reference"] == 31
    assert (
        audit.compared["tritonbench reference"] >= 1
        and audit.compared["kernelbenchx reference"] >= 1
    )
    assert audit.exceeding == []
    highest = max(c.similarity for row in audit.entries for c in row.closest)
    assert 0.0 < highest <= audit.threshold
    assert len(audit.entries) == len(retriever.entries) == 44


def test_the_guard_excludes_no_builtin_entry_from_any_rocm_task():
    retriever = CodeSimRetriever()
    for task in get_plugin_manager().build("suite", "rocm").tasks():
        code = Path(task.reference).read_text()
        for query in (RetrievalQuery(task=task), RetrievalQuery(task=task, code=code)):
            excluded = [r.entry.id for r in retriever.ranking(query) if r.verdict.contaminated]
            assert excluded == [], task.id


def test_codesim_can_be_audited():
    assert isinstance(CodeSimRetriever(), AuditableRetriever)


def test_an_edit_the_retrieval_tokens_ignore_escapes_the_overlap_rule_not_the_similarity_rule(
    tmp_path,
):
    task = hinge_task(tmp_path)
    verdict = ContaminationGuard(task, similarity_threshold=1.0).judge(
        CorpusEntry("x:retouched", RETOUCHED, "", "")
    )
    assert not verdict.contaminated and verdict.overlap < 0.3  # the 8-token rule misses it
    assert verdict.similarity > 0.9
    caught = ContaminationGuard(task).judge(CorpusEntry("x:retouched", RETOUCHED, "", ""))
    assert (
        caught.contaminated and "5-token Jaccard" in caught.reason and "reference" in caught.reason
    )


def test_the_audit_reports_exactly_what_the_retriever_excludes(tmp_path):
    task = hinge_task(tmp_path)
    retriever = CodeSimRetriever(
        CodeSimOptions(corpora=[str(planted(tmp_path, retouched=RETOUCHED))])
    )
    audit = retriever.audit([task])
    [excess] = audit.exceeding
    assert (excess.entry, excess.task, excess.against) == (
        "planted:retouched",
        "fixture/hinge_rows",
        "reference",
    )
    ranked = {r.entry.id: r for r in retriever.ranking(RetrievalQuery(task=task, code=REFERENCE))}
    assert ranked["planted:retouched"].verdict.similarity == pytest.approx(
        excess.similarity, abs=1e-4
    )
    assert ranked["planted:retouched"].verdict.contaminated
    # the only entries excluded for the task are the ones the audit lists
    assert {i for i, r in ranked.items() if r.verdict.contaminated} == {"planted:retouched"}
    for query in (RetrievalQuery(task=task, k=50), RetrievalQuery(task=task, code=REFERENCE, k=50)):
        assert "planted:retouched" not in [e.id for e in retriever.retrieve(query)]


def test_an_entry_excluded_for_one_task_is_retrieved_for_others(tmp_path):
    retriever = CodeSimRetriever(
        CodeSimOptions(corpora=[str(planted(tmp_path, retouched=RETOUCHED))], include_builtin=False)
    )
    other = Task(suite="fixture", id="other", instruction=INSTRUCTION, entry_points=[], harness="")
    assert [e.id for e in retriever.retrieve(RetrievalQuery(task=other))] == ["planted:retouched"]


def test_a_task_original_counts_as_its_code(tmp_path):
    unrelated = "@triton.jit\ndef noop_kernel(x_ptr):\n    pass\n"  # nothing like the reference
    task = hinge_task(tmp_path, original=unrelated)
    retriever = CodeSimRetriever(
        CodeSimOptions(
            corpora=[str(planted(tmp_path, copy_of_original=unrelated))], include_builtin=False
        )
    )
    audit = retriever.audit([task])
    assert audit.compared == {"fixture reference": 1, "fixture original": 1}
    [excess] = audit.exceeding
    assert (excess.entry, excess.against, excess.similarity) == (
        "planted:copy_of_original",
        "original",
        1.0,
    )
    assert retriever.retrieve(RetrievalQuery(task=task)) == []
    # without the original, the entry resembles nothing of the task
    without = Task(**{**task.__dict__, "timing_baseline": ""})
    assert retriever.audit([without]).exceeding == []


def test_the_audit_keeps_the_closest_task_per_suite_and_kind_of_code(tmp_path):
    near = hinge_task(tmp_path, suite="alpha")
    far = Task(
        suite="beta",
        id="far",
        instruction="Add two vectors.",
        entry_points=[],
        harness="",
        reference=str(tmp_path / "far.py"),
    )
    Path(far.reference).write_text("@triton.jit\ndef add_kernel(x_ptr, y_ptr):\n    pass\n")
    retriever = CodeSimRetriever(
        CodeSimOptions(corpora=[str(planted(tmp_path, retouched=RETOUCHED))], include_builtin=False)
    )
    [row] = retriever.audit([near, far]).entries
    by_suite = {c.suite: c for c in row.closest}
    assert by_suite["alpha"].similarity_task == "hinge_rows" and by_suite["alpha"].similarity > 0.9
    assert by_suite["alpha"].score_task == "hinge_rows" and by_suite["alpha"].score > 0
    assert by_suite["beta"].similarity == 0.0 and by_suite["beta"].similarity_task == ""


@pytest.mark.parametrize("value", [0.0, 1.5])
def test_the_similarity_threshold_must_lie_between_0_and_1(value):
    from geak_core.api.errors import InputError

    with pytest.raises(InputError, match=r"retriever\.similarity_threshold"):
        CodeSimOptions(similarity_threshold=value)


# --- the command ------------------------------------------------------------------------


def recipe_with_corpus(tmp_path: Path, folder: Path) -> Path:
    (tmp_path / "calls.jsonl").write_text("")
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        '[llm]\nbackend = "replay"\nsource = "calls.jsonl"\n[suite]\nname = "rocm"\n'
        f'[retriever]\nname = "codesim"\ncorpora = ["{folder}"]\n'
    )
    return recipe


def audit_cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["corpus", "audit", *args], env=env)


def test_the_command_audits_the_bundled_corpus_and_exits_0():
    result = audit_cli("--suite", "rocm")
    assert result.exit_code == 0, result.output
    assert "44 entries of codesim against rocm references (31)." in result.stdout
    assert "| entry | rocm references | highest score |" in result.stdout
    assert "| builtin:matmul_block_ptr | 0.299 test_tma_store_gemm |" in result.stdout
    assert result.stdout.rstrip().endswith("no entry over the threshold 0.4")


def test_a_suite_without_its_data_is_named_and_the_others_are_audited(monkeypatch):
    monkeypatch.delenv("GEAK_TRITONBENCH_DATA", raising=False)
    monkeypatch.setenv("GEAK_KERNELBENCHX_DATA", str(KERNELBENCHX_FIXTURE))
    result = audit_cli()
    assert result.exit_code == 0, result.output
    assert (
        "tritonbench: not audited: suite 'tritonbench' needs [suite] path (or the environment "
        "variable GEAK_TRITONBENCH_DATA)" in result.stderr
    )
    assert "against kernelbenchx references (4), rocm references (31)." in result.stdout


def test_tritonbench_tasks_are_audited_from_the_data_the_variable_names(monkeypatch):
    monkeypatch.setenv("GEAK_TRITONBENCH_DATA", str(TRITONBENCH_FIXTURE))
    result = audit_cli("--suite", "tritonbench", "--top", "3")
    assert result.exit_code == 0, result.output
    assert "against tritonbench references (6)." in result.stdout
    assert len([line for line in result.stdout.splitlines() if line.startswith("| builtin:")]) == 3


def test_an_entry_over_the_threshold_exits_1_and_is_listed(tmp_path):
    from geak_suite_rocm.suite import REFERENCES

    folder = planted(tmp_path, copy_of_gemm=(REFERENCES / "gemm.py").read_text())
    recipe = recipe_with_corpus(tmp_path, folder)
    result = audit_cli("--suite", "rocm", "--recipe", str(recipe), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["retriever"] == "codesim" and report["threshold"] == 0.4
    assert [
        (e["entry"], e["task"], e["against"], e["similarity"]) for e in report["exceeding"]
    ] == [("planted:copy_of_gemm", "rocm/gemm", "reference", 1.0)]
    assert len(report["entries"]) == 45
    text = audit_cli("--suite", "rocm", "--recipe", str(recipe))
    assert text.exit_code == 1
    assert "1 entries over the threshold 0.4 (never retrieved for these tasks):" in text.stdout
    assert "  planted:copy_of_gemm  rocm/gemm (reference)  1.000" in text.stdout


def test_originals_are_audited_as_the_rocm_suite_times_them(tmp_path):
    from geak_suite_rocm.suite import REFERENCES

    originals = tmp_path / "ROCm_v1"  # GEAK-eval's layout: kernel part, separator, test part
    originals.mkdir()
    kernel = (REFERENCES / "add_kernel.py").read_text().replace("add_kernel", "vendor_add")
    (originals / "test_add_kernel.py").write_text(f"{kernel}\n{SEPARATOR}\nimport pytest\n")
    folder = planted(tmp_path, vendor=kernel)
    recipe = recipe_with_corpus(tmp_path, folder)
    result = audit_cli(
        "--suite", "rocm", "--originals", str(originals), "--recipe", str(recipe), "--json"
    )
    report = json.loads(result.stdout)
    assert report["compared"] == {"rocm reference": 31, "rocm original": 1}
    assert ("planted:vendor", "rocm/test_add_kernel", "original") in {
        (e["entry"], e["task"], e["against"]) for e in report["exceeding"]
    }
    assert result.exit_code == 1


def test_originals_without_the_rocm_suite_is_bad_input(tmp_path):
    result = audit_cli("--suite", "tritonbench", "--originals", str(tmp_path))
    assert result.exit_code == 2 and "add --suite rocm" in result.output


def test_an_unknown_suite_is_bad_input():
    result = audit_cli("--suite", "rocm", "--suite", "rocn")
    assert result.exit_code == 2 and "no suite named 'rocn'" in result.output


def test_a_retriever_without_a_corpus_is_bad_input():
    result = audit_cli("--retriever", "none", "--suite", "rocm")
    assert result.exit_code == 2 and "retriever 'none' has no corpus to audit" in result.output


def test_no_loadable_suite_is_bad_input(monkeypatch):
    monkeypatch.delenv("GEAK_TRITONBENCH_DATA", raising=False)
    result = audit_cli("--suite", "tritonbench")
    assert result.exit_code == 2 and "no suite could be loaded" in result.output


def test_the_command_runs_as_a_subprocess(tmp_path):
    env = {**os.environ, "GEAK_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "corpus", "audit", "--suite", "rocm", "--top", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("| builtin:") == 1
