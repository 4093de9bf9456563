"""The ``baseline`` option: a user's ROCm_v1 originals become the modules timed in place of
our references (``Task.timing_baseline``), ported line by line to current Triton.

The synthetic ROCm_v1 files here are written for the tests (our own kernels plus a
stand-in harness); the last tests read the real GEAK-eval folder when it is present.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import pytest
from geak_core.api.errors import InputError, RecipeError
from geak_core.api.tasks import DeviceInfo, unmet_requirement
from geak_core.engine.plugins import get_plugin_manager
from geak_core.engine.recipe import load_recipe
from geak_suite_rocm.originals import OriginalError, kernel_part, port
from geak_suite_rocm.suite import BASELINE_ENV, REFERENCES, RocmOptions, RocmSuite
from test_references import _assert_close

SEPARATOR = "#" * 146
HARNESS_PART = "raise SystemExit('the test harness part must never be imported')\n"
REPO = Path(__file__).resolve().parents[3]
# The published originals, for the last tests: $GEAK_ROCM_BASELINE, else a GEAK-eval checkout
# in .ext/ (read before the fixture below clears the variable for the other tests).
PUBLISHED = Path(os.environ.get(BASELINE_ENV)
                 or REPO / ".ext/GEAK-eval/geak_eval/data/ROCm/data/ROCm_v1")


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GEAK_CACHE_DIR", str(folder))
    monkeypatch.delenv(BASELINE_ENV, raising=False)
    return folder


def rocm_v1(folder: Path, files: dict[str, str]) -> Path:
    """A ROCm_v1-shaped folder: each file is ``kernel``, the separator, a harness part."""
    folder.mkdir(parents=True, exist_ok=True)
    for task_id, kernel in files.items():
        (folder / f"{task_id}.py").write_text(f"{kernel}{SEPARATOR}  \n{HARNESS_PART}")
    return folder


def import_path(path: str):
    spec = importlib.util.spec_from_file_location(f"_baseline_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def harness_of(task):
    module_name, cls = task.harness.split(":")
    return getattr(importlib.import_module(module_name), cls)(task)


# -- splitting and porting ---------------------------------------------------------


def test_the_kernel_part_ends_at_the_separator_line_even_with_trailing_blanks():
    text = f"import triton\nX = 1\n{SEPARATOR}   \ndef test_x(): pass\n"
    assert kernel_part(text, "f.py") == ("import triton\nX = 1\n", 3)


def test_a_file_without_separator_is_refused_with_its_name():
    with pytest.raises(OriginalError, match="gemm.py: no separator line"):
        kernel_part("import triton\n" + "#" * 145 + "\n", "/data/gemm.py")


def test_annotated_constexpr_globals_become_constexpr_instances():
    ported, ports = port("BLOCK: tl.constexpr = 1024\nfp8: tl.constexpr = f(a, b)\n")
    assert ported == "BLOCK = tl.constexpr(1024)\nfp8 = tl.constexpr(f(a, b))\n"
    assert [(p.line, p.rule) for p in ports] == [(1, "constexpr_global"), (2, "constexpr_global")]


def test_annotations_inside_functions_are_left_alone():
    code = "@triton.jit\ndef k(X):\n    B: tl.constexpr = 4\n    tl.store(X, B)\n"
    assert port(code) == (code, [])


def test_unused_imports_of_removed_triton_apis_become_comments():
    code = (
        "import triton\n"
        "from triton.backends.compiler import AttrsDescriptor\n"
        "from triton.backends.compiler import AttrsDescriptor, BaseBackend\n"
        "import triton.tools.experimental_descriptor\n"
    )
    ported, ports = port(code)
    lines = ported.splitlines()
    assert lines[0] == "import triton"
    assert lines[1].startswith("# [port] removed in newer Triton")
    assert lines[2].startswith("from triton.backends.compiler import BaseBackend  # [port]")
    assert lines[3].startswith("# [port] removed in newer Triton")
    assert [p.rule for p in ports] == ["removed_triton_api"] * 3


def test_a_removed_api_the_kernels_use_is_not_hidden():
    code = "from triton.backends.compiler import AttrsDescriptor\nHINTS = AttrsDescriptor()\n"
    assert port(code) == (code, [])


def test_pytest_is_commented_out_only_when_the_kernel_part_does_not_use_it():
    ported, ports = port("import pytest\nimport torch\n")
    assert ported.splitlines()[0].startswith("# [port] test-only import")
    assert [p.rule for p in ports] == ["test_only_import"]
    used = "import pytest\nSKIP = pytest.mark.skip\n"
    assert port(used) == (used, [])


def test_an_unused_multiprocessing_import_is_a_test_only_import():
    ported, ports = port("import multiprocessing\nimport shutil\n")
    assert ported.splitlines()[0] == "# [port] test-only import, unused by the kernels: import multiprocessing"
    assert ported.splitlines()[1] == "import shutil"
    assert [p.rule for p in ports] == ["test_only_import"]
    used = "import multiprocessing\nPOOL = multiprocessing.Pool\n"
    assert port(used) == (used, [])


def test_tl_flip_without_a_dimension_flips_the_last_one():
    code = (
        "    y = tl.flip(x)\n"
        "    z = tl.flip(tl.load(X + off(a, b)))\n"
        "    w = tl.flip(x, 0)\n"
    )
    ported, ports = port(code)
    assert ported.splitlines() == [
        "    y = tl.flip(x, -1)",
        "    z = tl.flip(tl.load(X + off(a, b)), -1)",
        "    w = tl.flip(x, 0)",
    ]
    assert [(p.line, p.rule) for p in ports] == [(1, "flip_last_dim"), (2, "flip_last_dim")]


def test_porting_keeps_every_line_at_its_number():
    code = "import pytest\nBLOCK: tl.constexpr = 8\n\n@triton.jit\ndef k(x):\n    return tl.flip(x)\n"
    ported, _ = port(code)
    assert len(ported.splitlines()) == len(code.splitlines())


# -- the suite option --------------------------------------------------------------


def test_without_the_option_our_references_are_the_timing_baseline():
    assert all(task.timing_baseline == "" for task in RocmSuite().tasks())


def test_each_task_is_timed_against_the_kernel_part_of_its_original(tmp_path: Path, cache: Path):
    add = (REFERENCES / "add_kernel.py").read_text()
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": add})
    suite = RocmSuite(RocmOptions(baseline=str(folder)))
    task = suite.get("test_add_kernel")
    module = Path(task.timing_baseline)
    assert module.is_relative_to(cache) and module.name == "add_kernel.py"
    text = module.read_text()
    assert text.startswith(add) and "SystemExit" not in text
    assert f"derived from {folder / 'test_add_kernel.py'}" in text
    assert task.reference == str(REFERENCES / "add_kernel.py")  # correctness is still ours
    assert task.extra["timing_baseline"]["original"] == str(folder / "test_add_kernel.py")


def test_the_prepared_original_runs_under_our_harness(tmp_path: Path):
    kernel = (
        "import triton\nimport triton.language as tl\nimport pytest\n\n"
        "BLOCK: tl.constexpr = 256\n\n"
        "@triton.jit\n"
        "def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
        "    for start in range(0, BLOCK_SIZE, BLOCK):\n"
        "        offs = tl.program_id(0) * BLOCK_SIZE + start + tl.arange(0, BLOCK)\n"
        "        mask = offs < n_elements\n"
        "        x = tl.load(x_ptr + offs, mask=mask)\n"
        "        tl.store(output_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)\n"
    )
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": kernel})
    task = RocmSuite(RocmOptions(baseline=str(folder))).get("test_add_kernel")
    assert [p["rule"] for p in task.extra["timing_baseline"]["ports"]] == [
        "test_only_import", "constexpr_global"]
    module = import_path(task.timing_baseline)
    harness = harness_of(task)
    for case in harness.cases("small"):
        inputs = harness.make_inputs(case, seed=1, device="cpu")
        outputs = harness.allocate(case, inputs)
        harness.run(module, case, inputs, outputs)
        for name, value in harness.oracle(case, inputs).items():
            _assert_close(f"{case.name}/{name}", value, outputs[name], harness.oracle_tolerances(case))


def test_a_missing_original_is_reported_and_its_timing_fails_with_the_reason(tmp_path: Path):
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": "import triton\n"})
    suite = RocmSuite(RocmOptions(baseline=str(folder)))
    problems = suite.baseline_problems()
    assert "test_add_kernel" not in problems
    assert problems["gemm"] == f"{folder / 'gemm.py'}: no such file"
    task = suite.get("gemm")
    assert task.extra["timing_baseline"]["problem"] == problems["gemm"]
    with pytest.raises(RuntimeError, match="no timing baseline for rocm/gemm: .*gemm.py: no such file"):
        import_path(task.timing_baseline)


def test_an_original_without_separator_is_reported_with_its_path(tmp_path: Path):
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": "import triton\n"})
    (folder / "softmax.py").write_text("import triton\n")
    problems = RocmSuite(RocmOptions(baseline=str(folder))).baseline_problems()
    assert problems["softmax"].startswith(f"{folder / 'softmax.py'}: no separator line")


def test_an_original_that_does_not_parse_is_reported_with_its_line(tmp_path: Path):
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": "import triton\n",
                                            "softmax": "import triton\ndef broken(:\n"})
    problems = RocmSuite(RocmOptions(baseline=str(folder))).baseline_problems()
    assert problems["softmax"].startswith(f"{folder / 'softmax.py'}:2: the kernel part does not parse")


def test_a_folder_with_none_of_the_task_files_is_refused(tmp_path: Path):
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(InputError, match="holds none of the task files"):
        RocmSuite(RocmOptions(baseline=str(tmp_path / "elsewhere"))).tasks()


def test_a_baseline_that_is_not_a_folder_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="is not a folder"):
        RocmOptions(baseline=str(tmp_path / "missing"))


def test_an_unwritable_cache_is_a_located_input_error(tmp_path: Path, monkeypatch):
    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": "import triton\n"})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GEAK_CACHE_DIR", str(blocker))
    with pytest.raises(InputError, match=r"\[suite\] baseline: cannot write .*GEAK_CACHE_DIR"):
        RocmSuite(RocmOptions(baseline=str(folder))).tasks()


def test_the_recipe_key_is_resolved_against_the_recipe_folder(tmp_path: Path):
    rocm_v1(tmp_path / "data" / "ROCm_v1", {"test_add_kernel": "import triton\n"})
    (tmp_path / "calls.jsonl").write_text("")  # the replay source must exist too
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('[llm]\nbackend = "replay"\nsource = "calls.jsonl"\n\n'
                      '[suite]\nname = "rocm"\nbaseline = "data/ROCm_v1"\n')
    loaded = load_recipe(recipe, get_plugin_manager(), check_env=False)
    assert loaded.component("suite").options.baseline == str(tmp_path / "data" / "ROCm_v1")


def test_a_recipe_naming_a_missing_folder_fails_at_the_suite_table(tmp_path: Path):
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('[llm]\nbackend = "replay"\nsource = "calls.jsonl"\n\n'
                      '[suite]\nname = "rocm"\nbaseline = "nowhere"\n')
    (tmp_path / "calls.jsonl").write_text("")
    with pytest.raises(RecipeError, match=r"\[suite.baseline\] no such file or folder: .*nowhere"):
        load_recipe(recipe, get_plugin_manager(), check_env=False)


def test_geak_core_eval_takes_the_folder_from_the_environment(tmp_path: Path, monkeypatch):
    from geak_core.cli.cli_options import build_suite

    folder = rocm_v1(tmp_path / "ROCm_v1", {"test_add_kernel": "import triton\n"})
    monkeypatch.setenv(BASELINE_ENV, str(folder))
    suite = build_suite("rocm")
    assert suite.options.baseline == str(folder)
    assert suite.get("test_add_kernel").timing_baseline.endswith("add_kernel.py")


# -- the published originals, when a GEAK-eval checkout is at hand -------------------

INTERPRETER_TASKS = ["test_add_kernel", "test_triton_flip", "test_triton_sort",
                     "test_triton_swizzle2d", "test_reverse_range", "test_block_copy"]


def _published_folder() -> Path:
    if not (PUBLISHED / "test_add_kernel.py").is_file():
        pytest.skip(f"no GEAK-eval ROCm_v1 folder at {PUBLISHED} (set {BASELINE_ENV})")
    return PUBLISHED


def test_every_published_original_is_prepared_without_problems():
    suite = RocmSuite(RocmOptions(baseline=str(_published_folder())))
    assert suite.baseline_problems() == {}
    rules = {p["rule"] for t in suite.tasks() for p in t.extra["timing_baseline"]["ports"]}
    assert {"constexpr_global", "removed_triton_api", "flip_last_dim"} <= rules


@pytest.mark.parametrize("task_id", INTERPRETER_TASKS)
def test_the_published_original_agrees_with_our_oracle_under_the_interpreter(task_id):
    suite = RocmSuite(RocmOptions(baseline=str(_published_folder())))
    task = suite.get(task_id)
    device = DeviceInfo.detect()
    unmet = [why for r in task.requires if (why := unmet_requirement(r, device))]
    if unmet:
        pytest.skip("; ".join(unmet))
    module = import_path(task.timing_baseline)
    harness = harness_of(task)
    for case in harness.cases("small"):
        if any(unmet_requirement(r, device) for r in case.requires):
            continue
        inputs = harness.make_inputs(case, seed=0, device="cpu")
        outputs = harness.allocate(case, inputs)
        harness.run(module, case, inputs, outputs)
        for name, value in harness.oracle(case, inputs).items():
            _assert_close(f"{case.name}/{name}", value, outputs[name], harness.oracle_tolerances(case))
