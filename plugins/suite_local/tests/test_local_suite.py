"""The local suite: a folder of task files, each a task or a clear reason why not."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core.api.errors import InputError
from geak_suite_local.suite import LocalOptions, LocalSuite
from local_files import KERNEL, SCALE_RELU, write

BAD_FILES = {
    "broken_syntax.py": ("class Model(\n", "syntax error at line 1"),
    "no_model.py": ("import torch\ndef get_inputs():\n    return [torch.randn(4)]\n",
                    "no class Model"),
    "bad_inputs.py": ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                      "    def forward(self, x):\n        return x + 1\n"
                      "def get_inputs():\n    raise ValueError('no data here')\n",
                      "get_inputs() failed (line 7): ValueError: no data here"),
    "not_tensor.py": ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                      "    def forward(self, x):\n        return 'done'\n"
                      "def get_inputs():\n    return [torch.randn(4)]\n",
                      "forward() must return a tensor or a tuple of tensors; it returned str"),
}


def test_each_file_is_a_task_or_unusable_with_its_file_and_problem(
        tmp_path: Path, cache: Path) -> None:
    write(tmp_path, "scale_relu.py", SCALE_RELU)
    for name, (text, _) in BAD_FILES.items():
        write(tmp_path, name, text)
    write(tmp_path, "_helpers.py", "raise SystemExit('never imported')\n")
    suite = LocalSuite(LocalOptions(path=str(tmp_path)))
    assert [t.id for t in suite.tasks()] == ["scale_relu"]
    unusable = suite.unusable()
    assert sorted(unusable) == sorted(Path(n).stem for n in BAD_FILES)
    for name, (_, problem) in BAD_FILES.items():
        why = unusable[Path(name).stem]
        assert why.startswith(str((tmp_path / name).resolve())), why
        assert problem in why, why
    with pytest.raises(InputError, match="is unusable: .*no class Model"):
        suite.get("no_model")


def test_a_task_carries_the_contract_cases_and_kernelbench_protocol(
        tmp_path: Path, cache: Path) -> None:
    task = LocalSuite(LocalOptions(path=str(write(tmp_path, "scale_relu.py", SCALE_RELU)))).get(
        "scale_relu")
    assert [(e.name, e.kind, e.params) for e in task.entry_points] == [("ModelNew", "nn.Module",
                                                                        ("x",))]
    assert task.seeds == (0, 1, 2, 3, 4)
    assert task.tolerances == {"float32": [1e-4, 1e-4]}
    assert task.eager == "reference" and task.timing_baseline == ""
    assert task.extra["protocol"] == "kernelbench"
    full, = task.extra["cases"]
    # the meta run counts the bytes a case moves: input 64x256, output 64x256, float32
    assert full["bytes"] == 2 * 64 * 256 * 4
    small, = task.extra["small_cases"]
    assert small["overrides"] == {"batch_size": 4, "dim": 32} and small["bytes"] == 2 * 4 * 32 * 4
    reference = Path(task.reference).read_text(encoding="utf-8")
    assert reference.startswith(SCALE_RELU) and reference.rstrip().endswith("ModelNew = Model")
    assert "```python" in task.instruction and "def get_inputs" in task.instruction
    assert "outputs [64, 256] float32" in task.shapes_note


def test_a_users_own_kernel_is_the_starting_point_and_the_baseline(
        tmp_path: Path, cache: Path) -> None:
    # the file holds the user's Triton ModelNew, then the reference Model and its inputs
    own = KERNEL + "\n\n" + SCALE_RELU.split("\n", 3)[3]
    path = write(tmp_path, "scale_relu.py", own)
    task = LocalSuite(LocalOptions(path=str(path))).get("scale_relu")
    assert task.timing_baseline == str(path.resolve())
    assert task.eager == "harness"
    assert task.extra["user_kernel"] is True
    assert "start from it" in task.instruction


def test_a_path_that_holds_no_task_file_is_bad_input(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        LocalSuite(LocalOptions(path=str(tmp_path / "nowhere")))
    with pytest.raises(InputError, match="holds no .py task files"):
        LocalSuite(LocalOptions(path=str(tmp_path))).tasks()
    with pytest.raises(InputError, match="name a task file"):
        LocalSuite(LocalOptions())
