"""``bench/tune_rocm_recovery.py``: the detuning of ROCm references, and the recovered fraction.

The detuning is checked on real references (it parses, it differs, the entry kernels keep
their signatures, the grid tuner finds its knobs in it). The bench's accounting runs in
process with a stand-in judge whose speed grows with the config's BLOCK_SIZE up to 512
(the reference's speed): one tuning from 16, within 16 variants, reaches it (the grid
tuner's coarse pass starts at the model's best blocks, 512 to 4096), and a hill climb of
several passes finds nothing faster after the first. The real judge runs once, under the
interpreter: the detuned reference is correct, and nothing is tuned or reported as a speed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.model import EvalResult
from geak_suite_rocm.suite import RocmSuite
from geak_tuner_grid.knobs import find_knobs
from geak_tuner_grid.model import dimension

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPT = BENCH / "tune_rocm_recovery.py"


@pytest.fixture
def recovery(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import tune_rocm_recovery

    return tune_rocm_recovery


def _detune(module, task_id: str):
    task = RocmSuite().get(task_id)
    reference = Path(task.reference).read_text()
    kernels = [e.name for e in task.entry_points if e.kind == "triton.jit"]
    return task, reference, module.detune(reference, kernels, module.blocks_of(task_id))


def _signatures(code: str) -> dict[str, str]:
    return {fn.name: ast.unparse(fn.args) for fn in ast.walk(ast.parse(code)) if isinstance(fn, ast.FunctionDef)}


@pytest.mark.parametrize("task_id", ["test_add_kernel", "softmax", "test_cast_matmul", "test_gemm_fusion",
                                     "test_load_reduce"])
def test_a_detuned_reference_parses_differs_and_keeps_its_kernels_signatures(recovery, task_id):
    task, reference, detuned = _detune(recovery, task_id)
    assert detuned.code != reference
    assert _signatures(detuned.code) == _signatures(reference)
    knobs = {k.name: k.value for k in find_knobs(detuned.code)}
    assert knobs["num_warps"] == 1 and knobs["num_stages"] == 1
    assert {name: knobs[name] for name in recovery.blocks_of(task_id)} == {
        name: 16 for name in recovery.blocks_of(task_id)}
    assert len(detuned.changes) == 1 and "@triton.autotune added" in detuned.changes[0]


def test_the_harness_launched_kernel_gets_one_autotune_config_above_its_jit(recovery):
    _, reference, detuned = _detune(recovery, "test_add_kernel")
    added = "@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': 16}, num_warps=1, num_stages=1)], key=[])\n"
    assert detuned.code == reference.replace("@triton.jit\n", added + "@triton.jit\n", 1)


def test_an_autotune_list_becomes_its_first_config_at_its_smallest_and_a_launch_its_smallest(recovery):
    source = '''"""Ünïcode · text before the kernels."""
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "GROUP_M": 8}, num_warps=4),
]


@triton.autotune(configs=CONFIGS, key=["M"])
@triton.jit
def mm(a, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pass


@triton.jit
def scale(x, n, BLOCK: tl.constexpr):
    pass


def run(x):
    scale[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256, num_warps=8)
'''
    detuned = recovery.detune(source, ["mm", "scale"], ["BLOCK_M", "BLOCK_N"])
    assert ('CONFIGS = [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "GROUP_M": 8}, num_warps=1, num_stages=1)]'
            in detuned.code)
    assert "scale[(triton.cdiv(x.numel(), 16),)](x, x.numel(), BLOCK=16, num_warps=1)" in detuned.code
    assert detuned.code.count("@triton.autotune") == 1  # the launched kernel keeps its launch
    assert "scale.BLOCK 256->16 (launch)" in detuned.changes


def test_a_reference_that_autotunes_by_a_call_is_refused(recovery):
    with pytest.raises(recovery.DetuneError, match="autotune applied by a call"):
        _detune(recovery, "gemm")


def test_the_default_tasks_are_twelve_rocm_tasks(recovery):
    ids = {t.id for t in RocmSuite().tasks()}
    assert len(recovery.DEFAULT_TASKS) == 12 and set(recovery.DEFAULT_TASKS) <= ids
    assert set(recovery.OTHER_TASKS) <= ids


def _first_variants(code: str, count: int):
    from geak_hw_rocm_mi300.profiles import PROFILES
    from geak_tuner_grid.variants import Limits, generate_variants

    limits = Limits.from_profile(next(p for p in PROFILES if p.name == "mi300x"))
    result = generate_variants(code, limits, budget=16)
    return [{k.name: k.value for k in find_knobs(v.source) if k.site == "config"} for v in result.variants[:count]]


@pytest.mark.parametrize("task_id", ["test_add_kernel", "test_block_copy", "softmax", "naive_softmax", "layernorm"])
def test_the_coarse_variants_of_a_detuned_memory_bound_reference_reach_blocks_of_1024_and_more(recovery, task_id):
    """On an MI300X, without a judge: of the 16 variants, the 8 of the coarse pass."""
    _, _, detuned = _detune(recovery, task_id)
    configs = _first_variants(detuned.code, 8)
    assert max(c["BLOCK_SIZE"] for c in configs) >= 1024 and min(c["BLOCK_SIZE"] for c in configs) <= 1024
    assert any(c["num_warps"] >= 4 for c in configs if c["BLOCK_SIZE"] >= 1024)
    loops = task_id != "test_add_kernel" and task_id != "test_block_copy"
    assert any(c["num_stages"] != 1 for c in configs) == loops  # a loop-free kernel keeps its one stage


@pytest.mark.parametrize("task_id", ["test_cast_matmul", "test_gemm_fusion", "test_iv_dependent_matmul"])
def test_the_first_variant_of_a_detuned_gemm_reference_has_tiles_of_64_to_128(recovery, task_id):
    _, _, detuned = _detune(recovery, task_id)
    (first,) = _first_variants(detuned.code, 1)
    tiles = [v for name, v in first.items() if dimension(name) in ("M", "N")]
    assert len(tiles) == 2 and all(64 <= t <= 128 for t in tiles), first
    assert first["num_warps"] >= 2 and first["num_stages"] == 2


# -- the bench's accounting, with a stand-in judge ------------------------------------------


class BlockSpeedJudge(EvaluatorBase):
    """Correct always; timed; the speed of the config's BLOCK_SIZE, the reference's at 512."""

    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        found = re.search(r"'BLOCK_SIZE': (\d+)", candidate.code)
        speedup = min(int(found.group(1)), 512) / 512 if found else 1.0
        return EvalResult(task.id, candidate.id, call_ok=True, correct=True, mode="gpu", device="stand-in",
                          speedup=speedup, performance_measured=True)

    def evaluate_many(self, jobs, **_):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


def use_judge(name, judge_class):
    """The registered evaluators, and ``judge_class`` as ``name``."""
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    class Plugin:
        @hookimpl
        def geak_register_evaluators(self, register):
            register(name, judge_class)

    reset_plugin_manager(PluginManager(extra_plugins=[(name, Plugin())]))


@pytest.fixture
def with_stand_in_judge():
    use_judge("block-speed", BlockSpeedJudge)


def test_one_tuning_of_16_variants_recovers_the_references_speed_and_a_hill_climb_adds_nothing(
        recovery, with_stand_in_judge, tmp_path, capsys):
    out = tmp_path / "one.json"
    assert recovery.main(["--tasks", "test_add_kernel", "--evaluator", "block-speed", "--variants", "16",
                          "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["status"], row["detuned_speedup"], row["recovered"], row["reached"]) == ("done", 16 / 512, 1.0,
                                                                                          True)
    assert row["changes"] == ["add_kernel.BLOCK_SIZE 16->2048", "add_kernel.num_warps 1->8"]
    assert (row["variants_judged"], len(row["passes"])) == (16, 1)
    assert "'BLOCK_SIZE': 2048" in row["tuned_code"] and "'BLOCK_SIZE': 2048" in row["diff"]

    climbed = tmp_path / "climbed.json"
    assert recovery.main(["--tasks", "test_add_kernel", "--evaluator", "block-speed", "--json", str(climbed),
                          "--passes", "4", "--control"]) == 0
    data = json.loads(climbed.read_text())
    (row,) = data["rows"]
    # the first pass judges all 48 configurations that fit; the second, from 2048, none faster
    assert (row["recovered"], row["reached"], len(row["passes"])) == (1.0, True, 2)
    assert [p["variants_judged"] for p in row["passes"]] == [48, 16] and row["variants_judged"] == 64
    assert row["control"]["speedup"] == 1.0
    assert data["summary"]["reached"] == ["test_add_kernel"] and data["summary"]["target_met"] is None
    assert "| test_add_kernel | BLOCK_SIZE | 0.031x | 1.000x | yes |" in capsys.readouterr().out


def test_finished_tasks_are_kept_other_settings_refused_and_the_time_limit_starts_nothing(
        recovery, with_stand_in_judge, tmp_path, capsys):
    out = tmp_path / "out.json"
    base = ["--evaluator", "block-speed", "--json", str(out)]
    assert recovery.main(["--tasks", "test_add_kernel,softmax", "--limit-s", "1e-9", *base]) == 0
    assert json.loads(out.read_text())["rows"] == [] and "not started" in capsys.readouterr().err
    assert recovery.main(["--tasks", "test_add_kernel", *base]) == 0
    first = json.loads(out.read_text())["rows"]
    assert recovery.main(["--tasks", "test_add_kernel,softmax", *base]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["task"] for r in rows] == ["test_add_kernel", "softmax"] and rows[0] == first[0]
    assert "test_add_kernel: kept from" in capsys.readouterr().err
    assert recovery.main(["--tasks", "softmax", "--seconds", "60", *base]) == 2
    assert "seconds = 120.0, not 60.0" in capsys.readouterr().err
    assert recovery.main(["--table", str(out)]) == 0
    assert "2 of 2 measured tasks recovered at least 95%" in capsys.readouterr().out


@pytest.mark.slow
def test_on_the_cpu_the_detuned_reference_is_correct_and_no_speed_is_reported(tmp_path):
    out = tmp_path / "out.json"
    env = {**os.environ, "TRITON_INTERPRET": "1", "GEAK_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(SCRIPT), "--mode", "interpreter", "--tasks", "test_add_kernel",
                           "--workers", "1", "--json", str(out)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["status"], row["detuned"]["correct"], row["recovered"]) == ("not timed", True, None)
    assert row["notes"][0].startswith("tuning skipped: speed not measured")
    assert "no recovered fraction to report" in done.stdout


class WrongBelow64Judge(BlockSpeedJudge):
    """Wrong by its numbers (stage 2) at blocks under 64, else as BlockSpeedJudge."""

    def evaluate(self, task, candidate):
        found = re.search(r"'BLOCK_SIZE': (\d+)", candidate.code)
        if found and int(found.group(1)) < 64:
            return EvalResult(task.id, candidate.id, call_ok=True, correct=False, failed_stage="stage2",
                              reason="y: 5 elements differ", mode="gpu", device="stand-in")
        return super().evaluate(task, candidate)


def test_a_detuned_start_wrong_by_its_numbers_doubles_its_blocks_until_the_judge_finds_it_correct(
        recovery, tmp_path, capsys):
    use_judge("wrong-below-64", WrongBelow64Judge)
    out = tmp_path / "out.json"
    assert recovery.main(["--tasks", "test_add_kernel", "--evaluator", "wrong-below-64", "--variants", "8",
                          "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["status"], row["detuned_block"], row["detuned_speedup"]) == ("done", 64, 64 / 512)
    assert "'BLOCK_SIZE': 64" in row["detuned_code"]
    assert [n.split(":")[0] for n in row["notes"][:2]] == ["blocks of 16, 1 warp(s)", "blocks of 32, 1 warp(s)"]
    assert "| test_add_kernel | BLOCK_SIZE (at 64: smaller was wrong) |" in capsys.readouterr().out


class OutOfTimeAtOneWarpJudge(BlockSpeedJudge):
    """A child out of its budget at one warp (rmsnorm_fwd's detuned start on an H200), else as
    BlockSpeedJudge."""

    def evaluate(self, task, candidate):
        if "num_warps=1," in candidate.code:
            return EvalResult(task.id, candidate.id, call_ok=False, correct=False, failed_stage="run",
                              reason="the candidate's process timed out after 165 s (process group killed)",
                              mode="gpu", device="stand-in")
        return super().evaluate(task, candidate)


def test_a_detuned_start_out_of_the_judges_time_doubles_its_warps_until_the_judge_decides_it(
        recovery, tmp_path, capsys):
    use_judge("out-of-time-at-one-warp", OutOfTimeAtOneWarpJudge)
    out = tmp_path / "out.json"
    assert recovery.main(["--tasks", "test_add_kernel", "--evaluator", "out-of-time-at-one-warp",
                          "--variants", "8", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["status"], row["detuned_block"], row["detuned_warps"]) == ("done", 16, 2)
    assert "num_warps=2, num_stages=1" in row["detuned_code"]
    assert row["notes"][0].startswith("blocks of 16, 1 warp(s): run: the candidate's process timed out")
    assert row["notes"][0].endswith("detuned again with 2 warps")
    assert "| test_add_kernel | BLOCK_SIZE (at 2 warps: fewer ran out of time) |" in capsys.readouterr().out


def test_detuning_at_more_warps_sets_them_wherever_one_warp_would_be(recovery):
    task = RocmSuite().get("rmsnorm_fwd")
    reference = Path(task.reference).read_text()
    kernels = [e.name for e in task.entry_points if e.kind == "triton.jit"]
    detuned = recovery.detune(reference, kernels, recovery.blocks_of("rmsnorm_fwd"), warps=4)
    knobs = {k.name: k.value for k in find_knobs(detuned.code)}
    assert (knobs["num_warps"], knobs["num_stages"]) == (4, 1)
