"""Loading a TritonBench-G data folder: layouts, instructions, broken files."""

from __future__ import annotations

import json

import pytest
from geak_core.api.errors import InputError
from geak_core.api.tasks import Task
from tritonbench_paths import DATA, LISTED_ONLY, PERF, SEPARATOR, TASKS, UNUSABLE, USABLE


def test_the_data_folder_yields_one_task_per_usable_file(make_suite):
    assert {t.id for t in make_suite(DATA).tasks()} == USABLE


def test_the_task_folder_itself_is_accepted_too(make_suite):
    assert {t.id for t in make_suite(TASKS).tasks()} == USABLE


def test_a_missing_folder_is_an_input_error_naming_it(make_suite, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(InputError, match=str(missing)):
        make_suite(missing)


def test_a_folder_without_task_files_is_an_input_error_naming_it(make_suite, tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(InputError, match="neither a TritonBench_G_v1/ folder nor task .py files"):
        make_suite(tmp_path)


def test_without_a_path_the_suite_asks_for_one(monkeypatch):
    from geak_suite_tritonbench.suite import TritonBenchSuite

    monkeypatch.delenv("GEAK_TRITONBENCH_DATA", raising=False)
    with pytest.raises(InputError, match=r"needs \[suite\] path \(or the environment variable"):
        TritonBenchSuite(None)


def test_without_a_path_the_data_folder_comes_from_the_environment(monkeypatch):
    from geak_suite_tritonbench.suite import TritonBenchSuite

    monkeypatch.setenv("GEAK_TRITONBENCH_DATA", str(DATA))
    assert {t.id for t in TritonBenchSuite(None).tasks()} == USABLE


def test_broken_files_are_listed_as_unusable_with_their_reason(make_suite):
    unusable = make_suite().unusable()
    assert set(unusable) == UNUSABLE | LISTED_ONLY
    assert "no separator line" in unusable["no_separator"]
    assert "bad_syntax.py:4: syntax error in the reference code" in unusable["bad_syntax"]
    assert "defines no 'def test_...()' function" in unusable["no_test"]


def test_a_task_the_json_lists_without_a_file_is_unusable_and_says_so(make_suite):
    assert "lists not_in_folder.py, which the task folder" in make_suite().unusable()["not_in_folder"]
    with pytest.raises(InputError, match="unusable: .*not_in_folder.py"):
        make_suite().get("not_in_folder")


def test_without_the_json_only_broken_files_are_unusable(make_suite, copy_of_tasks):
    assert set(make_suite(copy_of_tasks).unusable()) == UNUSABLE


def test_asking_for_an_unusable_task_says_why(make_suite):
    with pytest.raises(InputError, match="unusable: .*no separator"):
        make_suite().get("no_separator")


def test_asking_for_an_unknown_task_suggests_a_close_name(make_suite):
    with pytest.raises(InputError, match="did you mean 'relu_kernel'"):
        make_suite().get("relu_kernl")


def test_difficulty_comes_from_the_json_as_a_number(make_suite):
    suite = make_suite()
    assert suite.get("add_vectors").difficulty == 1
    assert suite.get("square_fn").difficulty == 5


def test_the_complete_instruction_is_the_default(make_suite):
    task = make_suite().get("add_vectors")
    assert task.instruction.startswith("Write a Triton kernel add_kernel that adds two 1-D tensors")


def test_the_simple_instruction_is_chosen_by_option(make_suite):
    task = make_suite(instruction="simple").get("add_vectors")
    assert task.instruction == "Add two vectors with a Triton kernel."


def test_without_a_json_the_instruction_names_the_entry_points_and_difficulty_is_unknown(
    make_suite, copy_of_tasks
):
    task = make_suite(copy_of_tasks).get("add_vectors")
    assert task.difficulty is None
    assert "`add_wrapper(x, y)`" in task.instruction
    assert task.extra["instruction_source"] == "generated"


def test_an_explicit_json_path_is_used(make_suite, copy_of_tasks, tmp_path):
    custom = tmp_path / "mine.json"
    custom.write_text(json.dumps([
        {"file": "relu_kernel.py", "simp_instru": "s", "comp_instru": "Do ReLU.", "difficulty": "3"}
    ]))
    task = make_suite(copy_of_tasks, json=str(custom)).get("relu_kernel")
    assert (task.instruction, task.difficulty) == ("Do ReLU.", 3)


def test_a_malformed_json_is_an_input_error_naming_the_file(make_suite, copy_of_tasks, tmp_path):
    custom = tmp_path / "broken.json"
    custom.write_text('[{"file": "relu_kernel.py",')
    with pytest.raises(InputError, match="broken.json:1: not valid JSON"):
        make_suite(copy_of_tasks, json=str(custom))


def test_a_json_entry_without_a_file_name_is_an_input_error_naming_the_item(
    make_suite, copy_of_tasks, tmp_path
):
    custom = tmp_path / "entries.json"
    custom.write_text(json.dumps([{"file": "relu_kernel.py"}, {"difficulty": "2"}]))
    with pytest.raises(InputError, match="entries.json: item 1: expected an object"):
        make_suite(copy_of_tasks, json=str(custom))


def test_a_missing_explicit_json_is_an_input_error(make_suite, tmp_path):
    with pytest.raises(InputError, match=r"\[suite\] json: .*absent.json does not exist"):
        make_suite(json=str(tmp_path / "absent.json"))


def test_entry_points_are_the_wrappers_the_test_calls(make_suite):
    suite = make_suite()
    points = {t.id: [(e.name, e.kind, e.params) for e in t.entry_points] for t in suite.tasks()}
    assert points["add_vectors"] == [("add_wrapper", "function", ("x", "y"))]
    assert points["square_fn"] == [("square", "function", ())]
    assert points["tiny_matmul"] == [("matmul", "function", ("a", "b"))]


def test_extra_records_file_separator_test_function_result_variable_and_perf_script(make_suite):
    suite = make_suite()
    add = suite.get("add_vectors").extra
    assert add["file"] == str(TASKS / "add_vectors.py")
    assert add["separator_line"] == 22
    assert (add["test_function"], add["result_variable"]) == ("test_add", "result_gold")
    assert add["perf_script"] == str(PERF / "add_vectors_perf.py")
    assert suite.get("relu_kernel").extra["perf_script"] is None


def test_a_differently_named_result_variable_is_recorded(make_suite):
    extra = make_suite().get("row_softmax").extra
    assert extra["result_variable"] == "result_gold_softmax"


def test_a_missing_result_line_leaves_the_test_function_to_be_called(make_suite):
    extra = make_suite().get("tiny_matmul").extra
    assert (extra["test_function"], extra["result_variable"]) == ("test_matmul", None)
    assert extra["test_calls"] == [["test_matmul", "test_matmul()"]]


def test_the_reference_is_the_kernel_part_with_the_original_line_numbers(make_suite):
    task = make_suite().get("add_vectors")
    reference = open(task.reference).read()
    original = (TASKS / "add_vectors.py").read_text()
    assert SEPARATOR not in reference and "def test_add" not in reference
    assert original.startswith(reference)


def test_tasks_use_the_tritonbench_harness_and_round_trip_through_json(make_suite):
    for task in make_suite().tasks():
        assert task.harness == "geak_suite_tritonbench.harness:Harness"
        assert Task.from_dict(json.loads(json.dumps(task.to_dict()))) == task


def test_the_prompt_view_does_not_show_the_reference(make_suite):
    view = make_suite().get("add_vectors").prompt_view()
    assert "tl.load" not in json.dumps(view)


def test_tasks_carry_looser_float_tolerances_than_the_core_defaults(make_suite):
    tolerances = make_suite().get("add_vectors").tolerances
    assert tolerances["float32"] == [1e-3, 1e-3] and tolerances["float16"] == [1e-2, 1e-2]


def test_tolerance_options_override_per_dtype_and_keep_the_others(make_suite):
    tolerances = make_suite(tolerances={"float32": [0.0, 1e-6]}).get("add_vectors").tolerances
    assert tolerances["float32"] == [0.0, 1e-6] and tolerances["float16"] == [1e-2, 1e-2]


def test_a_tolerance_that_is_not_a_pair_is_rejected():
    from geak_suite_tritonbench.suite import TritonBenchOptions

    with pytest.raises(ValueError, match=r"tolerances.float32: expected \[atol, rtol\]"):
        TritonBenchOptions(path=str(DATA), tolerances={"float32": [1e-3]})


def test_the_suite_is_registered_as_tritonbench_with_its_options(tmp_path):
    from geak_core.engine.plugins import PluginManager
    from geak_suite_tritonbench.suite import TritonBenchOptions

    spec = PluginManager().spec("suite", "tritonbench")
    assert spec.options is TritonBenchOptions
    suite = spec.build(TritonBenchOptions(path=str(DATA), instruction="simple"))
    assert suite.name == "tritonbench" and len(suite.tasks()) == len(USABLE)



def test_wrappers_may_compute_with_torch_unless_the_option_forbids_it(make_suite):
    assert make_suite().get("add_vectors").forbid_torch_compute is False
    assert make_suite(forbid_torch_compute=True).get("add_vectors").forbid_torch_compute is True


def test_tasks_have_no_outlier_stage_and_say_why(make_suite):
    task = make_suite().get("add_vectors")
    assert task.outliers is None and "own test builds its inputs" in task.outlier_note


def test_perf_scripts_are_found_in_golden_metrics_beside_the_task_folder(make_suite, copy_of_tasks):
    import shutil

    shutil.copytree(PERF, copy_of_tasks.parent / "golden_metrics")
    task = make_suite(copy_of_tasks).get("add_vectors")
    assert task.extra["perf_script"] == str(copy_of_tasks.parent / "golden_metrics" /
                                            "add_vectors_perf.py")


def test_an_explicit_perf_scripts_folder_is_used(make_suite, copy_of_tasks):
    task = make_suite(copy_of_tasks, perf_scripts=str(PERF)).get("add_vectors")
    assert task.extra["perf_script"] == str(PERF / "add_vectors_perf.py")


def test_files_other_than_python_in_the_task_folder_are_ignored(make_suite, copy_of_tasks):
    (copy_of_tasks / "performance_analysis.txt").write_text("notes")
    assert {t.id for t in make_suite(copy_of_tasks).tasks()} == USABLE


def test_tasks_the_interpreter_can_run_need_nothing(make_suite):
    assert all(t.requires == [] for t in make_suite().tasks())


def test_a_task_the_interpreter_cannot_run_needs_a_gpu_and_says_why(make_suite, copy_of_tasks):
    path = copy_of_tasks / "relu_kernel.py"
    path.write_text(path.read_text().replace("out = torch.empty_like(x)",
                                             "out = torch.empty(x.shape, device='cuda')"))
    (requirement,) = make_suite(copy_of_tasks).get("relu_kernel").requires
    assert requirement.name == "gpu"
    assert requirement.reason == "under the CPU interpreter: its reference code places tensors on 'cuda'"
