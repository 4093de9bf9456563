"""TritonBench's training set (train_crawl.json, train_synth.json) as a `codesim` corpus, and
the paper recipe that retrieves from it. The JSON here is our own, in the files' format: a list
of records with the kernel under `code`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.api.components import RetrievalQuery
from geak_core.api.errors import InputError
from geak_core.api.tasks import EntryPoint, Task
from geak_core.cli import main
from geak_retriever_codesim.corpus import load_tritonbench_train, tritonbench_train_files
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "paper" / "one-shot-tritonbench-train.toml"
TRITONBENCH_FIXTURE = ROOT / "plugins/suite_tritonbench/tests/fixtures/TritonBench/data"

HISTOGRAM = """import triton
import triton.language as tl


@triton.jit
def histogram_kernel(x_ptr, bins_ptr, n, n_bins, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(bins_ptr + x % n_bins, 1, mask=offs < n)
"""

CLAMP = """import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, lo, hi, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, lo), hi), mask=offs < n)
"""

CRAWL = [
    {"code": HISTOGRAM, "repo": "example/histograms"},
    {"code": "   "},  # empty code: skipped
]
SYNTH = [{"instruction": "Clamp every element into [lo, hi].", "code": CLAMP}]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A TritonBench checkout holding the two training files in data/."""
    data = tmp_path / "TritonBench" / "data"
    data.mkdir(parents=True)
    (data / "train_crawl.json").write_text(json.dumps(CRAWL))
    (data / "train_synth.json").write_text(json.dumps(SYNTH))
    return tmp_path / "TritonBench"


def task(instruction: str, name: str) -> Task:
    return Task(
        suite="fixture",
        id=name,
        instruction=instruction,
        entry_points=[EntryPoint(name)],
        harness="",
    )


def test_both_training_files_are_found_in_the_checkout_or_its_data_folder(checkout: Path) -> None:
    expected = [checkout / "data" / "train_crawl.json", checkout / "data" / "train_synth.json"]
    assert tritonbench_train_files(checkout) == expected
    assert tritonbench_train_files(checkout / "data") == expected
    assert tritonbench_train_files(expected[1]) == [expected[1]]  # one file on its own


def test_entries_are_named_after_their_file_and_record(checkout: Path) -> None:
    entries = load_tritonbench_train(checkout)
    assert [(e.id, e.description) for e in entries] == [
        ("train_crawl:0", ""),
        ("train_synth:0", "Clamp every element into [lo, hi]."),
    ]
    assert entries[0].code == HISTOGRAM
    assert entries[1].source == f"{checkout / 'data' / 'train_synth.json'}#0"


def test_a_folder_without_the_files_names_them(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"neither train_crawl\.json nor train_synth\.json"):
        tritonbench_train_files(tmp_path)
    with pytest.raises(
        InputError, match=r"does not exist.*train_crawl\.json and train_synth\.json"
    ):
        tritonbench_train_files(tmp_path / "absent")


def test_the_option_is_checked_when_the_options_are_made(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"retriever\.tritonbench_train: .*train_crawl\.json"):
        CodeSimOptions(tritonbench_train=str(tmp_path))


def test_the_training_set_is_searched_instead_of_the_builtin_corpus(checkout: Path) -> None:
    retriever = CodeSimRetriever(
        CodeSimOptions(tritonbench_train=str(checkout), include_builtin=False, query="instruction")
    )
    assert [e.id for e in retriever.entries] == ["train_crawl:0", "train_synth:0"]
    [example] = retriever.retrieve(RetrievalQuery(task=task("Clamp values.", "clamp_values")))
    assert example.id == "train_synth:0" and example.code == CLAMP
    [example] = retriever.retrieve(
        RetrievalQuery(task=task("Count values into bins.", "histogram_of_values"))
    )
    assert example.id == "train_crawl:0"


def test_a_training_record_copying_the_task_is_never_its_example(
    checkout: Path, tmp_path: Path
) -> None:
    reference = tmp_path / "clamp_reference.py"
    reference.write_text(CLAMP.replace("clamp_kernel", "bounded_kernel"))
    clamp = task("Clamp values.", "clamp_values")
    clamp.reference = str(reference)
    retriever = CodeSimRetriever(
        CodeSimOptions(tritonbench_train=str(checkout), include_builtin=False, query="instruction")
    )
    assert "train_synth:0" not in [
        e.id for e in retriever.retrieve(RetrievalQuery(task=clamp, k=5))
    ]
    [excess] = retriever.audit([clamp]).exceeding
    assert (excess.entry, excess.task) == ("train_synth:0", "fixture/clamp_values")


@pytest.fixture
def paper_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    monkeypatch.setenv("GEAK_TRITONBENCH_DATA", str(TRITONBENCH_FIXTURE))
    monkeypatch.setenv("GEAK_TRITONBENCH_JSON", str(TRITONBENCH_FIXTURE / "TritonBench_G_v1.json"))


def test_the_paper_recipe_checks_with_the_training_set_variable_set(
    checkout: Path, paper_environment: None, monkeypatch
) -> None:
    monkeypatch.setenv("GEAK_TRITONBENCH_TRAIN", str(checkout / "data"))
    result = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert result.exit_code == 0, result.output
    assert f"ok: {RECIPE}" in result.output and "retriever=codesim" in result.output
    shown = CliRunner().invoke(main, ["recipe", "show", str(RECIPE)])
    assert f'tritonbench_train = "{checkout / "data"}"' in shown.output
    assert "include_builtin = false" in shown.output and 'query = "instruction"' in shown.output


def test_the_paper_recipe_names_the_variable_and_the_files_when_unset(
    paper_environment: None, monkeypatch
) -> None:
    monkeypatch.delenv("GEAK_TRITONBENCH_TRAIN", raising=False)
    result = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert result.exit_code == 2
    line = next(
        n
        for n, text in enumerate(RECIPE.read_text().splitlines(), 1)
        if text.startswith("tritonbench_train")
    )
    assert (
        f"{RECIPE}:{line}: [retriever.tritonbench_train] environment variable "
        "GEAK_TRITONBENCH_TRAIN is not set"
    ) in result.output
    assert "export GEAK_TRITONBENCH_TRAIN=..." in result.output
    assert "train_crawl.json and train_synth.json" in result.output


def test_the_paper_recipe_names_the_files_when_the_folder_lacks_them(
    tmp_path: Path, paper_environment: None, monkeypatch
) -> None:
    monkeypatch.setenv("GEAK_TRITONBENCH_TRAIN", str(tmp_path))
    result = CliRunner().invoke(main, ["recipe", "check", str(RECIPE)])
    assert result.exit_code == 2
    assert f"{RECIPE}:" in result.output
    assert "neither train_crawl.json nor train_synth.json" in result.output
