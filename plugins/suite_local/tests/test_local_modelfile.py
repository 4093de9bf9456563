"""Reading a task file in KernelBench's format without running it."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_suite_local.modelfile import ModelFileError, read_model_file
from local_files import SCALE_RELU, write


def test_a_kernelbench_file_reads_with_kernelbenchs_defaults(tmp_path: Path) -> None:
    text = SCALE_RELU.replace('SMALL_SHAPES = [{"batch_size": 4, "dim": 32}]\n', "")
    mf = read_model_file(write(tmp_path, "op.py", text))
    assert mf.stem == "op"
    assert mf.forward_params == ("x",)
    assert [s.name for s in mf.shapes] == ["default"] and mf.shapes[0].overrides == {}
    assert mf.small_shapes == mf.shapes
    assert mf.dtypes == ["float32"]
    assert mf.tolerances == {"float32": [1e-4, 1e-4]}
    assert mf.model_doc == "relu(x * w + b) over the last dimension."
    assert not mf.has_candidate


def test_module_settings_give_input_sets_dtypes_and_tolerances(tmp_path: Path) -> None:
    text = SCALE_RELU + '''
SHAPES = [{"name": "wide", "dim": 4096}, {"batch_size": 8}]
DTYPES = ["float32", "bfloat16"]
ATOL = {"bfloat16": 0.05}
RTOL = 0.001
DESCRIPTION = "the epilogue of our MLP"
'''
    mf = read_model_file(write(tmp_path, "op.py", text))
    assert [(s.name, s.overrides) for s in mf.shapes] == [("wide", {"dim": 4096}),
                                                          ("set1", {"batch_size": 8})]
    assert mf.small_shapes[0].overrides == {"batch_size": 4, "dim": 32}
    assert mf.tolerances == {"float32": [1e-4, 1e-3], "bfloat16": [0.05, 1e-3]}
    assert mf.description == "the epilogue of our MLP"


def test_a_sidecar_toml_wins_key_by_key(tmp_path: Path) -> None:
    path = write(tmp_path, "op.py", SCALE_RELU + 'DTYPES = ["float16"]\n')
    write(tmp_path, "op.toml", 'dtypes = ["float32"]\ndescription = "from the sidecar"\n')
    mf = read_model_file(path)
    assert mf.dtypes == ["float32"]
    assert mf.description == "from the sidecar"
    assert mf.sidecar == (tmp_path / "op.toml").resolve()


def test_a_users_own_modelnew_is_found(tmp_path: Path) -> None:
    mf = read_model_file(write(tmp_path, "op.py", SCALE_RELU + "\nclass ModelNew(Model):\n"
                                                              "    pass\n"))
    assert mf.has_candidate


@pytest.mark.parametrize(("text", "problem"), [
    ("class Model(\n", "syntax error at line 1"),
    ("import torch\ndef get_inputs():\n    return []\n", "no class Model"),
    ("import torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
     "        return x\n", "no function get_inputs()"),
    ("import torch.nn as nn\nclass Model(nn.Module):\n    pass\ndef get_inputs():\n"
     "    return []\n", "class Model (line 2) defines no forward()"),
    (SCALE_RELU + 'SHAPES = [{"batchsize": 2}]\n',
     "SHAPES[0]: 'batchsize' is not a module-level name of the file (did you mean "
     "'batch_size'?)"),
    (SCALE_RELU + "SHAPES = [dict(dim=4)]\n", "SHAPES (line"),
    (SCALE_RELU + 'DTYPES = ["int8"]\n', "DTYPES must be a non-empty list"),
    (SCALE_RELU + 'ATOL = {"float8": 1.0}\n', "ATOL: unknown dtype 'float8'"),
])
def test_a_file_that_cannot_be_a_task_names_itself_and_the_problem(
        tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, "bad.py", text)
    with pytest.raises(ModelFileError) as caught:
        read_model_file(path)
    assert str(caught.value).startswith(str(path.resolve()))
    assert problem in str(caught.value)


def test_an_unknown_sidecar_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "op.py", SCALE_RELU)
    write(tmp_path, "op.toml", "dtype = ['float32']\n")
    with pytest.raises(ModelFileError, match=r"op.toml: unknown key 'dtype' \(did you mean "
                                             r"'dtypes'\?\)"):
        read_model_file(path)
