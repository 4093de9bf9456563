"""``geak-core optimize``: a reference file in KernelBench's format to a judged winner, and
the winner to an installed op (CPU: the Triton interpreter, scripted replies)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main

from tests.support.venvs import install_and_run_its_tests

REFERENCE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x * w + b) over the last dimension."""

    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim))
        self.b = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.relu(x * self.w + self.b)


batch_size = 4
dim = 32


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''

REPLY = '''\
The kernel reads each element once and fuses the affine map with the relu.

```python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % dim
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x * w + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim))
        self.b = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_relu_kernel[(triton.cdiv(n, 64),)](x, self.w, self.b, out, n, x.shape[-1], BLOCK=64)
        return out
```
'''

RECIPE = '''\
[run]
name = "optimize-test"

[llm]
backend = "replay"
mode = "scripted"
source = "script.toml"

[agent]
iterations = 1
lineages = 1
'''


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "scale_relu.py").write_text(REFERENCE, encoding="utf-8")
    (ops / "no_model.py").write_text("import torch\n\ndef get_inputs():\n    return []\n",
                                     encoding="utf-8")
    (tmp_path / "reply.md").write_text(REPLY, encoding="utf-8")
    (tmp_path / "script.toml").write_text(textwrap.dedent('''\
        [[reply]]
        match = { task = "scale_relu" }
        file = "reply.md"
        '''), encoding="utf-8")
    (tmp_path / "recipe.toml").write_text(RECIPE, encoding="utf-8")
    return ops, tmp_path / "recipe.toml"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.slow
def test_a_reference_file_becomes_a_judged_winner_and_an_installed_op(tmp_path: Path) -> None:
    ops, recipe = _setup(tmp_path)
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["optimize", str(ops), "--recipe", str(recipe),
                                       "--output-dir", str(runs)])
    assert result.exit_code == 0, result.output
    winner = re.search(r"winner of scale_relu \(not timed: correctness only\): (\S+)",
                       result.output)
    assert winner, result.output
    assert Path(winner.group(1)).read_text(encoding="utf-8").count("scale_relu_kernel[") == 1
    # the other file is no task, and says why; the good one ran all the same
    assert "not a task: " in result.output and "no_model.py: no class Model" in result.output
    # KernelBench's fast_p is in the summary, untimed on a CPU and saying so
    assert "fast_0 0/1" in result.output and "not timed: CPU interpreter" in result.output
    export = re.search(r"as a PyTorch op: geak-core export-kernel (\S+) --task scale_relu",
                       result.output)
    assert export, result.output

    package = tmp_path / "scale_relu_op"
    exported = CliRunner().invoke(main, ["export-kernel", export.group(1), "--task",
                                         "scale_relu", "-o", str(package)])
    assert exported.exit_code == 0, exported.output
    _, output = install_and_run_its_tests(package, "geak_scale_relu", tmp_path)
    assert re.search(r"\b7 passed\b", output), output


def test_without_an_llm_or_a_recipe_it_says_what_to_set(tmp_path: Path) -> None:
    ops, _ = _setup(tmp_path)
    result = CliRunner().invoke(main, ["optimize", str(ops / "scale_relu.py")])
    assert result.exit_code == 2
    assert "no LLM configured: set one of OPENAI_API_KEY" in result.output


@pytest.mark.parametrize(("args", "message"), [
    (["nowhere.py"], "nowhere.py: no such file or folder"),
    (["OPS/no_model.py", "--recipe", "RECIPE"], "no usable task file (1 unusable, above)"),
    (["OPS", "--recipe", "RECIPE", "--backend", "openai"], "with --recipe, use --set llm.backend"),
    (["OPS", "--recipe", "missing.toml"], "no such recipe: missing.toml"),
])
def test_bad_input_is_one_line_and_exit_status_2(tmp_path: Path, args: list[str],
                                                 message: str) -> None:
    ops, recipe = _setup(tmp_path)
    args = [a.replace("OPS", str(ops)).replace("RECIPE", str(recipe)) for a in args]
    result = CliRunner().invoke(main, ["optimize", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
