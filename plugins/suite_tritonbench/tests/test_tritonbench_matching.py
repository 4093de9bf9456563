"""Finding the task of another system's output record."""

from __future__ import annotations

import json

from tritonbench_paths import DATA, SEPARATOR, TASKS


def _json_output(name: str) -> str:
    entries = json.loads((DATA / "TritonBench_G_v1.json").read_text())
    return next(e["output"] for e in entries if e["file"] == name)


def test_a_label_equal_to_the_reference_code_matches(make_suite):
    assert make_suite().match_label(_json_output("row_softmax.py")) == "row_softmax"


def test_whitespace_differences_do_not_matter(make_suite):
    label = _json_output("relu_kernel.py").replace("\n", "\r\n\n   \n") + "   \n"
    assert make_suite().match_label(label) == "relu_kernel"


def test_a_label_contained_in_a_task_file_matches_by_containment(make_suite):
    text = (TASKS / "tiny_matmul.py").read_text()
    fragment = text[text.index("@triton.jit"): text.index(SEPARATOR)]
    assert make_suite().match_label(fragment) == "tiny_matmul"


def test_an_edited_label_matches_by_token_overlap(make_suite):
    label = _json_output("add_vectors.py").replace("BLOCK_SIZE=64", "BLOCK_SIZE=128")
    label = "# copied from another release\n" + label.replace("out = torch.empty_like(x)",
                                                          "out = torch.zeros_like(x)")
    assert make_suite().match_label(label) == "add_vectors"


def test_an_unrelated_label_matches_nothing(make_suite):
    assert make_suite().match_label("print('hello world')\nx = [1, 2, 3]\n") is None


def test_a_tiny_fragment_identifies_no_task(make_suite):
    assert make_suite().match_label("import torch") is None


def test_a_record_names_its_task_by_file(make_suite):
    suite = make_suite()
    assert suite.resolve_record({"file": "scale_check.py", "predict": ""}) == "scale_check"
    assert suite.resolve_record({"file": "scale_check"}) == "scale_check"


def test_a_record_names_its_task_by_label(make_suite):
    record = {"instruction": "x", "label": _json_output("square_fn.py"), "predict": "code"}
    assert make_suite().resolve_record(record) == "square_fn"


def test_a_record_without_file_or_label_is_matched_by_its_instruction_text(make_suite):
    record = {"prompt": "You are an expert. Add two vectors with a Triton kernel.", "predict": ""}
    assert make_suite().resolve_record(record) == "add_vectors"


def test_an_unknown_record_resolves_to_none(make_suite):
    assert make_suite().resolve_record({"file": "elsewhere.py", "predict": ""}) is None
