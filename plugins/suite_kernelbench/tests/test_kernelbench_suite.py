"""The KernelBench suite over a small checkout in KernelBench's layout (tests/fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.api.errors import InputError
from geak_core.cli import main
from geak_suite_kernelbench.suite import KernelBenchOptions, KernelBenchSuite

CHECKOUT = Path(__file__).parent / "fixtures" / "KernelBench"
CLAMP_KERNEL = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(x, -0.5), 0.5), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        clamp_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out
'''


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEAK_CACHE_DIR", str(tmp_path / "cache"))


def test_levels_load_as_tasks_named_by_level_and_problem() -> None:
    suite = KernelBenchSuite(KernelBenchOptions(path=str(CHECKOUT), levels=[1, 2]))
    ids = [t.id for t in suite.tasks()]
    assert ids == ["level1_1_Clamp", "level1_2_RowSum", "level2_1_Affine_Tanh"]
    task = suite.get("level2_1_Affine_Tanh")
    assert (task.level, task.extra["problem_id"]) == (2, 1)
    assert task.eager == "reference" and task.forbid_torch_compute
    assert "KernelBench level 2 problem 1" in task.instruction
    # its forward returns a tuple: two outputs, counted by the meta run
    assert task.extra["cases"][0]["bytes"] == (4 * 32 + 4 * 32 + 1) * 4
    only_one = KernelBenchSuite(KernelBenchOptions(path=str(CHECKOUT), levels=[2]))
    assert [t.id for t in only_one.tasks()] == ["level2_1_Affine_Tanh"]


def test_the_path_may_name_the_checkout_its_folder_or_one_level() -> None:
    for path in (CHECKOUT, CHECKOUT / "KernelBench", CHECKOUT / "KernelBench" / "level1"):
        suite = KernelBenchSuite(KernelBenchOptions(path=str(path), levels=[1]))
        assert len(suite.tasks()) == 2


def test_a_checkout_without_levels_or_a_missing_level_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no KernelBench/level<N> folders"):
        KernelBenchSuite(KernelBenchOptions(path=str(tmp_path), levels=[1]))
    with pytest.raises(InputError, match="has no level 3"):
        KernelBenchSuite(KernelBenchOptions(path=str(CHECKOUT), levels=[1, 3]))
    with pytest.raises(ValueError, match="levels: expected some of 1, 2, 3, 4"):
        KernelBenchOptions(path=str(CHECKOUT), levels=[5])
    with pytest.raises(InputError, match="never downloads it"):
        KernelBenchSuite(KernelBenchOptions(path=""))


def test_kernelbench_sample_files_resolve_to_their_problem() -> None:
    suite = KernelBenchSuite(KernelBenchOptions(path=str(CHECKOUT), levels=[1, 2]))
    assert suite.resolve_record({"file": "level_1_problem_2_sample_0_kernel.py"}) == \
        "level1_2_RowSum"
    assert suite.resolve_record({"level": 2, "problem_id": 1}) == "level2_1_Affine_Tanh"
    assert suite.resolve_record({"task": "level1_1_Clamp"}) == "level1_1_Clamp"
    assert suite.resolve_record({"file": "level_3_problem_9_sample_0_kernel.py"}) is None


@pytest.mark.slow
def test_eval_judges_a_folder_laid_out_as_kernelbenchs_runs(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "my_run"
    run.mkdir(parents=True)
    (run / "level_1_problem_1_sample_0_kernel.py").write_text(CLAMP_KERNEL, encoding="utf-8")
    (run / "level_1_problem_1_sample_1_kernel.py").write_text(
        CLAMP_KERNEL.replace("-0.5), 0.5)", "-0.4), 0.5)"), encoding="utf-8")
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(main, [
        "eval", "--suite", "kernelbench", "--suite-option", f"path={CHECKOUT}",
        "--suite-option", "levels=[1]", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    records = {Path(r["candidate"]).name: r for r in map(json.loads, out.read_text().splitlines())}
    assert {r["task"] for r in records.values()} == {"level1_1_Clamp"}
    assert records["level_1_problem_1_sample_0_kernel.py"]["correct"]
    wrong = records["level_1_problem_1_sample_1_kernel.py"]
    assert not wrong["correct"] and wrong["failed_stage"] == "stage1"


def test_the_kernelbench_recipe_checks_against_a_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = Path(__file__).resolve().parents[3] / "recipes" / "kernelbench.toml"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    monkeypatch.delenv("GEAK_KERNELBENCH_DATA", raising=False)
    unset = CliRunner().invoke(main, ["recipe", "check", str(recipe)])
    assert unset.exit_code == 2 and "GEAK_KERNELBENCH_DATA is not set" in unset.output
    monkeypatch.setenv("GEAK_KERNELBENCH_DATA", str(CHECKOUT))
    result = CliRunner().invoke(main, ["recipe", "check", str(recipe)])
    assert result.exit_code == 0, result.output
    assert f"ok: {recipe}" in result.output
