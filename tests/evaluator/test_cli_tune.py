"""``geak-core tune``: candidates read as eval reads them, each judged and tuned, one record a
candidate (untuned and tuned speedup, the kept variant's knobs, variants judged) written
atomically, and a stopped run resumed without tuning a record again.

The mini suite's ``scale`` launches its kernel with ``BLOCK=64`` (tied to the grid's
``cdiv``), which the grid tuner varies over every block Triton's default 4 warps fill and
registers hold, 128 to 16384 (the model's best first). Under the interpreter the real
judge times nothing; the other tests use a stand-in judge that times by block size: up to
256 is correct, and the speedup is the block over 64."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.model import EvalResult
from geak_core.cli import main
from judge_support import FIXTURES

REFERENCES = FIXTURES / "minisuite" / "references"
SCALE = (REFERENCES / "scale.py").read_text()
JUDGED: list[str] = []


class BlockJudge(EvaluatorBase):
    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        JUDGED.append(candidate.id)
        block = int(re.search(r"BLOCK=(\d+)", candidate.code).group(1))
        warps = re.search(r"num_warps=(\d+)", candidate.code)  # Triton's 4 where the launch gives none
        correct = block <= 256
        speed = block / 64 / (1 + abs(math.log2((int(warps.group(1)) if warps else 4) / 4)) / 100)
        return EvalResult(task.id, candidate.id, call_ok=True, correct=correct, mode="gpu",
                          speedup=speed if correct else None, performance_measured=correct)

    def evaluate_many(self, jobs):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


class BlockJudgePlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("blocks", BlockJudge)


@pytest.fixture
def tune_cli():
    """``geak-core tune`` with the mini suite and the stand-in judge registered."""
    import minisuite
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    JUDGED.clear()
    reset_plugin_manager(PluginManager(extra_plugins=[("minisuite", minisuite), ("blocks", BlockJudgePlugin())]))
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["tune", "--suite", "mini", *args], catch_exceptions=False)

    return invoke


def _records(tmp_path, lines):
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


@pytest.mark.slow
def test_on_a_cpu_a_correct_kernel_is_judged_and_its_record_says_tuning_was_skipped(tune_cli, tmp_path):
    candidate = tmp_path / "scale.py"
    candidate.write_text(SCALE)
    out = tmp_path / "tuned.jsonl"
    result = tune_cli("--task", "scale", str(candidate), "--mode", "interpreter", "--workers", "1",
                      "--pythonpath", str(FIXTURES), "--seeds", "0", "-o", str(out))
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["correct"], record["untuned_speedup"], record["tuned_speedup"]) == (True, None, None)
    assert (record["variants_judged"], record["kept"], record["changes"]) == (0, None, [])
    assert record["notes"] == ["tuning skipped: speed not measured, so no variant could be found faster (the "
                               "Triton interpreter runs kernels on the CPU, so its latencies say nothing about "
                               "GPU speed)"]
    assert "correct  tuning skipped: speed not measured" in result.output


def test_each_record_holds_the_untuned_and_tuned_speedup_and_the_kept_variants_knobs(tune_cli, tmp_path):
    records = _records(tmp_path, [{"task": "scale", "code": SCALE, "id": "mine"}])
    out = tmp_path / "tuned.jsonl"
    result = tune_cli("--evaluator", "blocks", "--candidates", str(records), "-o", str(out))
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["task"], record["candidate"], record["correct"]) == ("scale", "mine", True)
    assert (record["untuned_speedup"], record["tuned_speedup"]) == (1.0, 4.0)
    # blocks above 256 are wrong; the launch gives no num_warps, so warps are varied too (the
    # stand-in finds Triton's default 4 the fastest)
    assert (record["variants_judged"], record["variants_correct"]) == (16, 7)
    assert record["changes"] == ["_scale_kernel.BLOCK 64->256"]
    assert "-    _scale_kernel[(triton.cdiv(n, 64),)](x, out, alpha, n, BLOCK=64)" in record["diff"]
    assert "_scale_kernel[(triton.cdiv(n, 256),)](x, out, alpha, n, BLOCK=256)" in record["tuned_code"]
    assert "1.000x -> 4.000x  _scale_kernel.BLOCK 64->256  (16 variants judged)" in result.output


def test_the_variant_budget_bounds_what_is_judged(tune_cli, tmp_path):
    records = _records(tmp_path, [{"task": "scale", "code": SCALE, "id": "mine"}])
    result = tune_cli("--evaluator", "blocks", "--candidates", str(records), "--variants", "1", "--json")
    assert result.exit_code == 0, result.output
    assert JUDGED == ["mine", "mine-tune1"]
    summary = json.loads(result.stdout)
    # the one variant is the model's best, a block of 2048: wrong for the stand-in judge
    assert summary == {"records": 1, "correct": 1, "tuned": 1, "improved": 0, "variants_judged": 1,
                       "judge_errors": 0, "mean_untuned_speedup": 1.0, "mean_tuned_speedup": 1.0}


def test_a_record_without_code_is_reported_not_correct_and_not_tuned(tune_cli, tmp_path):
    records = _records(tmp_path, [{"task": "scale", "predict": "Sorry, I cannot help with that.", "id": "r"}])
    out = tmp_path / "tuned.json"
    result = tune_cli("--evaluator", "blocks", "--candidates", str(records), "-o", str(out))
    assert result.exit_code == 0, result.output
    (record,) = json.loads(out.read_text())
    assert (record["correct"], record["failed_stage"], record["variants_judged"]) == (False, "extract", 0)
    assert record["notes"] == ["not tuned: the candidate is not correct"] and JUDGED == []


def test_resume_keeps_the_records_a_stopped_run_wrote_and_tunes_only_the_rest(tune_cli, tmp_path):
    records = _records(tmp_path, [{"task": "scale", "code": SCALE, "id": "first"},
                                  {"task": "scale", "code": SCALE.replace("x, alpha", "x, alpha "), "id": "second"}])
    out = tmp_path / "tuned.jsonl"
    assert tune_cli("--evaluator", "blocks", "--candidates", str(records), "-o", str(out)).exit_code == 0
    complete = out.read_text()
    out.write_text(complete.splitlines(keepends=True)[0] + '{"task": "scale", "cand')  # killed mid-write
    JUDGED.clear()
    result = tune_cli("--evaluator", "blocks", "--candidates", str(records), "-o", str(out), "--resume")
    assert result.exit_code == 0, result.output
    assert "resuming" in result.output and "1 records kept, 1 to tune" in result.output
    assert {cid.partition("-")[0] for cid in JUDGED} == {"second"}
    assert [json.loads(line)["candidate"] for line in out.read_text().splitlines()] == ["first", "second"]


def test_a_tuner_option_is_checked_as_the_tuner_section_is(tune_cli, tmp_path):
    records = _records(tmp_path, [{"task": "scale", "code": SCALE, "id": "mine"}])
    result = tune_cli("--evaluator", "blocks", "--candidates", str(records), "--tuner-option", "dtype_bytes=3")
    assert result.exit_code == 2
    assert "--tuner-option: [tuner.dtype_bytes] invalid value 3 (valid: 1, 2, 4)" in result.output


def test_help_names_the_inputs_the_budget_and_the_journal():
    listing = CliRunner().invoke(main, ["--help"])
    assert "tune" in listing.output.split("Commands:", 1)[1]
    shown = CliRunner().invoke(main, ["tune", "--help"])
    assert shown.exit_code == 0
    for option in ("--suite", "--task", "--candidates", "--tuner", "--tuner-option", "--variants",
                   "--seconds", "-o, --out", "--json", "--resume", "--evaluator", "--hardware"):
        assert option in shown.output, option
