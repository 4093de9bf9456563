"""Loading KernelBench-X tasks: layouts, categories, variants, quantization, published timings."""

from __future__ import annotations

import pytest
from geak_core.api.errors import InputError
from geak_core.api.tasks import CATEGORIES
from geak_suite_kernelbenchx.categories import FOLDERS, TASKS_PER_FOLDER
from geak_suite_kernelbenchx.published import input_size, machine_for, row_for
from kernelbenchx_paths import CHECKOUT, ROOT, TASKS, USABLE

needs_checkout = pytest.mark.skipif(not (CHECKOUT / "data" / "kernelbenchx").is_dir(),
                                    reason="no KernelBench-X checkout under .ext/KernelBenchX")


def test_the_category_list_is_the_benchmark_folder_list():
    assert CATEGORIES == FOLDERS
    assert len(CATEGORIES) == 15 and "SpatialOps" in CATEGORIES and "Attention" not in CATEGORIES
    assert set(TASKS_PER_FOLDER) == set(FOLDERS) and sum(TASKS_PER_FOLDER.values()) == 184


@needs_checkout
def test_the_recorded_folders_match_the_checkout():
    root = CHECKOUT / "data" / "kernelbenchx"
    folders = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert tuple(folders) == FOLDERS
    assert {f: len(list((root / f).glob("*.py"))) for f in folders} == TASKS_PER_FOLDER


@pytest.mark.parametrize("where", [ROOT, ROOT / "data", TASKS])
def test_the_checkout_its_data_folder_and_its_task_folder_all_load(make_suite, where):
    suite = make_suite(where)
    assert {t.id for t in suite.tasks()} == USABLE
    assert suite.layout.json_path is not None and suite.layout.perf_dir is not None


def test_the_path_comes_from_the_environment_when_not_given(monkeypatch):
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite

    monkeypatch.setenv("GEAK_KERNELBENCHX_DATA", str(ROOT))
    assert {t.id for t in KernelBenchXSuite(KernelBenchXOptions()).tasks()} == USABLE
    monkeypatch.delenv("GEAK_KERNELBENCHX_DATA")
    with pytest.raises(InputError, match="GEAK_KERNELBENCHX_DATA"):
        KernelBenchXSuite(KernelBenchXOptions())


def test_a_folder_without_tasks_is_an_input_error(make_suite, tmp_path):
    with pytest.raises(InputError, match="holds no KernelBench-X task folders"):
        make_suite(tmp_path)
    with pytest.raises(InputError, match="is not a folder"):
        make_suite(tmp_path / "missing")


def test_a_broken_file_is_unusable_with_its_reason_and_the_rest_load(make_suite):
    suite = make_suite()
    assert "no separator line" in suite.unusable()["no_separator"]
    with pytest.raises(InputError, match="unusable"):
        suite.get("no_separator")
    with pytest.raises(InputError, match="no task 'softsine'"):
        suite.get("softsine")


def test_tasks_carry_category_difficulty_and_the_functions_the_test_calls(make_suite):
    suite = make_suite()
    task = suite.get("softsign")
    assert task.category == "Activation" and task.difficulty == 1
    assert [e.name for e in task.entry_points] == ["softsign"]
    assert task.entry_points[0].kind == "function"
    assert "Applies softsign element-wise." in task.instruction
    assert "softsign(x) = x / (1 + |x|)" in task.instruction
    assert task.forbid_torch_compute and task.seeds == (0,)
    assert task.eager == "reference" and not task.timing_baseline  # timed against PyTorch eager itself
    assert task.tolerances["float32"] == [1e-5, 1e-5]
    assert task.tolerances["float16"] == task.tolerances["bfloat16"] == [5e-3, 5e-3]
    assert task.extra["perf_script"].endswith("softsign_perf.py")
    assert suite.categories() == {"Activation": ["softsign", "softsign_fp16"],
                                  "Math": ["scaled_sum"], "Quantization": ["mul_w8a8"]}
    reference = open(task.reference).read()
    assert "def softsign" in reference and "test_softsign" not in reference


def test_precision_variants_are_linked_to_their_base_task(make_suite):
    suite = make_suite()
    base, fp16 = suite.get("softsign"), suite.get("softsign_fp16")
    assert base.extra["variants"] == ["softsign_fp16"] and base.extra["precision"] is None
    assert fp16.extra["variant_of"] == "softsign" and fp16.extra["precision"] == "fp16"
    assert fp16.extra["dtype"] == "torch.float16"
    assert "inputs and outputs are float16" in fp16.instruction
    only = make_suite(variants=["fp16"])
    assert {t.id for t in only.tasks()} == {"softsign_fp16"}


def test_an_unknown_variant_is_rejected(make_suite):
    with pytest.raises(ValueError, match="variants"):
        make_suite(variants=["fp8"])


def test_two_stages_where_the_test_draws_outlier_mode_inputs(make_suite):
    suite = make_suite()
    staged = suite.get("softsign")
    assert staged.outliers is not None and staged.outliers.inputs == ("outlier_stage",)
    assert staged.extra["outlier_mode"] is True
    single = suite.get("scaled_sum")
    assert single.outliers is None and "no outlier-mode inputs" in single.outlier_note


def test_quantization_tasks_get_the_contract_and_its_thresholds(make_suite):
    suite = make_suite()
    task = suite.get("mul_w8a8")
    assert task.harness.endswith(":QuantizationHarness")
    quantization = task.extra["quantization"]
    assert quantization["thresholds"] == {"cosine_sim": 0.98, "l1_relative": 0.05, "rmse": 0.1}
    assert quantization["spec"]["weight"] == "int8" and quantization["check"] is True
    assert "cosine similarity >= 0.98" in task.instruction and "inside your Triton" in task.instruction
    assert suite.get("softsign").harness.endswith(":Harness")
    loose = make_suite(quantization_check=False, precision_thresholds={"rmse": 0.5})
    assert loose.get("mul_w8a8").extra["quantization"]["check"] is False
    # the task's own thresholds win over the option, which fills what the task lacks
    assert loose.get("mul_w8a8").extra["quantization"]["thresholds"]["rmse"] == 0.1


def test_published_timings_match_the_gpu_by_name(make_suite):
    suite = make_suite()
    machine, rows = suite.published_for("softsign", "NVIDIA H800")
    assert machine == "h800" and [r["ms"] for r in rows] == [0.0041, 0.0044]
    assert suite.published_for("softsign", "NVIDIA GeForce RTX 4090")[0] == "4090"
    assert suite.published_for("softsign", "NVIDIA H100 80GB HBM3") == (None, [])
    machines = ["4090", "5090", "a100", "h20", "h800", "l20"]
    assert machine_for("NVIDIA H200", machines) is None
    assert machine_for("NVIDIA H20", machines) == "h20"
    assert machine_for("NVIDIA A100-SXM4-80GB", machines) == "a100"
    description = {"shape": [4096], "dtype": "float32"}
    assert input_size(description) == [4096]
    assert row_for(rows, description)["ms"] == 0.0044
    assert row_for(rows, {"shape": [8], "dtype": "float32"}) is None


def test_records_name_their_task_by_file(make_suite):
    suite = make_suite()
    assert suite.resolve_record({"file": "Activation/softsign.py", "predict": ""}) == "softsign"
    assert suite.resolve_record({"file": "softsign"}) == "softsign"
    assert suite.resolve_record({"file": "other.py"}) is None
    reply = "```python\nimport triton\n\ndef softsign(x):\n    return x\n```"
    assert "def softsign" in suite.record_code({"file": "softsign.py", "predict": reply})


@needs_checkout
def test_the_whole_checkout_loads():
    from geak_suite_kernelbenchx.suite import KernelBenchXOptions, KernelBenchXSuite

    suite = KernelBenchXSuite(KernelBenchXOptions(path=str(CHECKOUT)))
    tasks = suite.tasks()
    assert len(tasks) == 184 and suite.unusable() == {}
    assert {c: len(v) for c, v in suite.categories().items()} == TASKS_PER_FOLDER
    quantized = [t for t in tasks if t.extra["quantization"]]
    assert len(quantized) == 6
    assert all(t.extra["quantization"]["thresholds"]["cosine_sim"] in (0.9, 0.95)
               for t in quantized)
    assert sorted(suite.get("gelu").extra["variants"]) == ["gelu_bf16", "gelu_fp16", "gelu_int8"]
    assert sum(1 for t in tasks if t.outliers is not None) == 173
    assert all(t.extra["perf_script"] for t in tasks)
    assert suite.published_for("gelu", "NVIDIA H800")[0] == "h800"


def test_unusable_files_are_said_once_with_where_their_reasons_are_listed(make_suite, copy_of_checkout,
                                                                           caplog):
    from click.testing import CliRunner
    from geak_core.cli import main

    with caplog.at_level("WARNING"):
        for _ in range(2):  # as a run builds it: once to check the recipe, once to run it
            make_suite(copy_of_checkout).tasks()
    said = [r.getMessage() for r in caplog.records if "no_separator" in r.getMessage()]
    assert len(said) == 1, said
    assert "1 task file under" in said[0] and "cannot be read as a task and is left out" in said[0]
    assert f"geak-core tasks kernelbenchx --option path={copy_of_checkout}" in said[0]
    listed = CliRunner().invoke(main, ["tasks", "kernelbenchx", "--option", f"path={copy_of_checkout}"])
    assert listed.exit_code == 0, listed.output
    assert "1 task file left out, not readable as tasks:" in listed.output
    assert "  no_separator: " in listed.output and "no separator line" in listed.output
