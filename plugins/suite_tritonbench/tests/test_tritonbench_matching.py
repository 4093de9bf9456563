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


# -- labels of the published output files ---------------------------------------


def _add_task(data, name, text, instruction, output=None):
    """A task file in a copied data folder, with its own entry in the instruction JSON."""
    (data / "TritonBench_G_v1" / f"{name}.py").write_text(text)
    path = data / "TritonBench_G_v1.json"
    entries = json.loads(path.read_text())
    entries.append({"file": f"{name}.py", "simp_instru": instruction, "comp_instru": instruction,
                    "output": output or text.split(SEPARATOR)[0], "difficulty": "2", "repo": ""})
    path.write_text(json.dumps(entries))


def test_an_end_of_turn_marker_after_the_label_does_not_matter(make_suite):
    for marker in ("<|im_end|>", "<|EOT|>"):
        label = _json_output("tiny_matmul.py") + marker
        assert make_suite().match_label(label) == "tiny_matmul"


def test_a_label_cut_short_matches_the_task_whose_code_it_begins(make_suite):
    text = _json_output("tiny_matmul.py")
    label = text[: int(len(text) * 0.25)]  # far below a quarter of the task's text
    assert len(label) < 0.3 * len(text) and make_suite().match_label(label) == "tiny_matmul"


def test_a_label_of_an_unusable_task_names_it_and_not_a_similar_task(make_suite, copy_of_data):
    relu = (copy_of_data / "TritonBench_G_v1" / "relu_kernel.py").read_text()
    twin = relu.replace("BLOCK=32", "BLOCK=64").replace(SEPARATOR, "# the test follows")
    code = twin.split("# the test")[0]  # no separator: the file is unusable
    _add_task(copy_of_data, "relu_twin", twin, "Write relu_twin.", output=code)
    suite = make_suite(copy_of_data)
    assert "no separator" in suite.unusable()["relu_twin"]
    record = {"instruction": "Write relu_twin.", "label": code, "predict": "x"}
    assert suite.resolve_record(record) == "relu_twin"
    edited = code.replace("out = torch.empty_like(x)", "out = torch.zeros_like(x)")
    assert suite.match_label(edited) == "relu_twin"


def test_a_label_two_tasks_begin_with_is_decided_by_the_records_instruction(make_suite,
                                                                           copy_of_data):
    add = (copy_of_data / "TritonBench_G_v1" / "add_vectors.py").read_text()
    twin = add.replace("def add_wrapper(x, y):\n", "def add_wrapper(x, y):\n    x = x * 1\n")
    _add_task(copy_of_data, "add_twin", twin, "Write the twin of the vector addition.")
    suite = make_suite(copy_of_data)
    shared = add[: add.index("def add_wrapper")] + "def add_wrapper(x, y):\n"
    for instruction, expected in [("Write the twin of the vector addition.", "add_twin"),
                                  (_instruction("add_vectors.py"), "add_vectors")]:
        record = {"instruction": f"You are an expert.\n{instruction}", "label": shared,
                  "predict": ""}
        assert suite.resolve_record(record) == expected


def test_tasks_with_the_same_tokens_in_another_order_are_told_apart_by_order(make_suite,
                                                                            copy_of_data):
    add = (copy_of_data / "TritonBench_G_v1" / "add_vectors.py").read_text()
    swapped = add.replace(
        "    x = tl.load(x_ptr + offsets, mask=mask)\n    y = tl.load(y_ptr + offsets, mask=mask)\n",
        "    y = tl.load(y_ptr + offsets, mask=mask)\n    x = tl.load(x_ptr + offsets, mask=mask)\n",
    )
    assert swapped != add
    _add_task(copy_of_data, "add_swapped", swapped, "Write the swapped addition.")
    label = "# a header the release added\n" + swapped.split(SEPARATOR)[0].replace("64", "128")
    assert make_suite(copy_of_data).match_label(label) == "add_swapped"


def _instruction(name: str) -> str:
    entries = json.loads((DATA / "TritonBench_G_v1.json").read_text())
    return next(e["comp_instru"] for e in entries if e["file"] == name)
