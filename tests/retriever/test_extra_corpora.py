"""Extra corpora: folders of .py files, JSON and JSONL records, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from geak_core.api.components import RetrievalQuery
from geak_core.api.errors import InputError
from geak_core.api.tasks import EntryPoint, Task
from geak_retriever_codesim.corpus import load_corpus, split_docstring
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

KERNEL = (
    "@triton.jit\ndef histogram_bins_kernel(x_ptr, bins_ptr, n):\n    tl.atomic_add(bins_ptr, 1)\n"
)
TASK = Task(
    suite="fixture",
    id="hist",
    instruction="Count values into histogram bins.",
    entry_points=[EntryPoint("hist_kernel")],
    harness="",
)


def only(path: Path, **options: object) -> CodeSimRetriever:
    return CodeSimRetriever(CodeSimOptions(corpora=[str(path)], include_builtin=False, **options))  # type: ignore[arg-type]


def test_a_folder_corpus_uses_module_docstrings_as_descriptions(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "hist.py").write_text(f'"""Histogram of values into bins."""\n{KERNEL}')
    (tmp_path / "plain.py").write_text("def f():\n    return 1\n")
    (tmp_path / "_private.py").write_text(KERNEL)
    entries = load_corpus(tmp_path)
    assert [(e.id, e.description) for e in entries] == [
        (f"{tmp_path.name}:nested/hist", "Histogram of values into bins."),
        (f"{tmp_path.name}:plain", ""),
    ]
    assert entries[0].code.startswith("@triton.jit")


def test_a_json_list_with_code_and_description_fields(tmp_path: Path) -> None:
    path = tmp_path / "crawl.json"
    path.write_text(json.dumps([{"code": KERNEL, "description": "histogram bins"}]))
    [example] = only(path).retrieve(RetrievalQuery(task=TASK))
    assert (example.id, example.description) == ("crawl:0", "histogram bins")
    assert example.source == f"{path}#0"


def test_tritonbench_style_records_are_read_by_their_common_field_names(tmp_path: Path) -> None:
    path = tmp_path / "tb.json"
    record = {"file": "hist.py", "simp_instru": "Histogram kernel.", "output": KERNEL}
    path.write_text(json.dumps([record]))
    [entry] = load_corpus(path)
    assert (entry.id, entry.description, entry.code) == ("tb:hist.py", "Histogram kernel.", KERNEL)


def test_a_json_object_holding_the_records_under_data(tmp_path: Path) -> None:
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": [{"id": "h", "code": KERNEL}]}))
    assert [e.id for e in load_corpus(path)] == ["wrapped:h"]


def test_a_jsonl_corpus_reads_one_record_per_line(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps({"code": KERNEL}) + "\n\n" + json.dumps({"code": "x = 1"}) + "\n")
    assert [e.source for e in load_corpus(path)] == [f"{path}#0", f"{path}#1"]


def test_configured_field_names_take_precedence(tmp_path: Path) -> None:
    path = tmp_path / "custom.jsonl"
    path.write_text(
        json.dumps({"triton": KERNEL, "about": "histogram bins", "code": "nope"}) + "\n"
    )
    retriever = only(path, code_fields=["triton"], description_fields=["about"])
    [entry] = retriever.entries
    assert (entry.code, entry.description) == (KERNEL, "histogram bins")


def test_records_with_empty_code_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "gaps.json"
    path.write_text(json.dumps([{"code": "  "}, {"code": KERNEL}]))
    assert [e.id for e in load_corpus(path)] == ["gaps:1"]


def test_duplicate_ids_across_corpora_are_made_unique(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "k.py").write_text(KERNEL)
    path = tmp_path / "a.json"  # same corpus name "a", same entry name "k"
    path.write_text(json.dumps([{"id": "k", "code": KERNEL}]))
    retriever = CodeSimRetriever(
        CodeSimOptions(corpora=[str(folder), str(path)], include_builtin=False)
    )
    assert [e.id for e in retriever.entries] == ["a:k", "a:k#2"]


def test_extra_corpora_are_searched_alongside_the_builtin_one(tmp_path: Path) -> None:
    path = tmp_path / "extra.json"
    path.write_text(json.dumps([{"id": "hist", "code": KERNEL, "description": "histogram bins"}]))
    retriever = CodeSimRetriever(CodeSimOptions(corpora=[str(path)]))
    assert len(retriever.entries) > 40
    assert retriever.retrieve(RetrievalQuery(task=TASK))[0].id == "extra:hist"


def test_a_missing_corpus_path_names_the_option_index(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"retriever\.corpora\[0\].*does not exist"):
        only(tmp_path / "absent.json")


def test_an_unsupported_file_type_says_what_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text("code\n")
    with pytest.raises(InputError, match=r"folder of \.py files, a \.json or a \.jsonl"):
        load_corpus(path)


def test_invalid_json_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"code": KERNEL}) + "\n{oops\n")
    with pytest.raises(InputError, match=rf"{path}:2: not valid JSON"):
        load_corpus(path)


def test_a_record_without_any_code_field_names_the_fields_tried(tmp_path: Path) -> None:
    path = tmp_path / "nocode.json"
    path.write_text(json.dumps([{"code": KERNEL}, {"text": "x"}]))
    with pytest.raises(
        InputError, match=r"record 1 has none of the code fields code, output.*text"
    ):
        load_corpus(path)


def test_a_json_object_without_a_record_list_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "obj.json"
    path.write_text(json.dumps({"name": "x"}))
    with pytest.raises(InputError, match="list of records"):
        load_corpus(path)


def test_split_docstring_keeps_files_without_one_whole() -> None:
    assert split_docstring("x = 1\n") == ("", "x = 1\n")
    assert split_docstring("def broken(:\n") == ("", "def broken(:\n")
    assert split_docstring('"""Doc."""\n\nx = 1\n') == ("Doc.", "x = 1")
