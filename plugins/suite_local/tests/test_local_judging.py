"""ModelNew candidates judged on local tasks, through ``geak-core eval`` (CPU interpreter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.cli import main
from local_files import KERNEL, SCALE_RELU, write

pytestmark = pytest.mark.slow

TORCH_FORWARD = KERNEL.replace('''        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_relu_kernel[(triton.cdiv(n, 128),)](x, self.w, self.b, out, n, x.shape[-1],
                                                  BLOCK=128)
        return out''', '''        out = torch.empty_like(x)
        scale_relu_kernel[(1,)](x, self.w, self.b, out, 0, x.shape[-1], BLOCK=128)
        return torch.relu(x * self.w + self.b)''')
# forward() and __call__ come from torch's own ReLU: the class is defined here, its work is not
INHERITED = KERNEL.split("class ModelNew")[0] + '''
class ModelNew(nn.ReLU):
    def __init__(self, dim):
        super().__init__()
'''
SUBCLASS_OUTPUT = KERNEL.replace("class ModelNew(nn.Module):", '''class Lazy(torch.Tensor):
    pass


class ModelNew(nn.Module):''').replace("        return out", "        return out.as_subclass(Lazy)")
# right on ordinary inputs, wrong where an input is a huge outlier (|x| > 8 is clipped)
CLIPPED = KERNEL.replace("x = tl.load(x_ptr + offs, mask=mask)",
                         "x = tl.minimum(tl.maximum(tl.load(x_ptr + offs, mask=mask), -8.0), 8.0)")


def judge(tmp_path: Path, task_path: Path, candidates: dict[str, str]) -> dict[str, dict]:
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name, code in candidates.items():
        write(folder, f"{name}.py", code)
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(main, [
        "eval", "--suite", "local", "--suite-option", f"path={task_path}", "--task", "scale_relu",
        str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {Path(r["candidate"]).stem: r for r in records}


def test_modelnew_candidates_are_judged_and_their_cheats_caught(
        tmp_path: Path, cache: Path) -> None:
    task_path = write(tmp_path, "scale_relu.py", SCALE_RELU)
    verdicts = judge(tmp_path, task_path, {
        "honest": KERNEL, "torch_forward": TORCH_FORWARD, "inherited": INHERITED,
        "subclass_output": SUBCLASS_OUTPUT, "clipped": CLIPPED})
    assert len(verdicts) == 5
    assert verdicts["honest"]["correct"], verdicts["honest"]["reason"]
    assert verdicts["honest"]["mode"] == "interpreter"

    torch_forward = verdicts["torch_forward"]
    assert not torch_forward["correct"] and torch_forward["failed_stage"] == "anticheat"
    assert "computed with torch" in torch_forward["reason"]

    inherited = verdicts["inherited"]
    assert not inherited["correct"] and inherited["failed_stage"] == "contract"
    assert "takes its forward() from ReLU" in inherited["reason"]

    subclass = verdicts["subclass_output"]
    assert not subclass["correct"]
    assert "not a plain torch.Tensor" in (subclass["reason"] + (subclass["error"] or ""))

    clipped = verdicts["clipped"]
    assert not clipped["correct"] and clipped["failed_stage"] == "stage2"
    # KernelBench's correctness check (its five draws at its tolerances) passes these two;
    # the judge's outlier stage and anti-cheat checks do not. Failures before stage 1 fail both.
    assert "passes_kernelbench_protocol" in clipped["flags"]
    assert "passes_kernelbench_protocol" in torch_forward["flags"]
    assert "passes_kernelbench_protocol" not in inherited["flags"] + subclass["flags"]


def test_a_users_own_kernel_is_timed_as_the_baseline_and_a_candidate_judged_against_it(
        tmp_path: Path, cache: Path) -> None:
    task_path = write(tmp_path, "scale_relu.py", KERNEL + "\n\n" + SCALE_RELU.split("\n", 3)[3])
    verdicts = judge(tmp_path, task_path, {"honest": KERNEL})
    assert verdicts["honest"]["correct"], verdicts["honest"]["reason"]
