"""The grid tuner: variants as candidates of their own, judged by the judge it is given within
the budget, the fastest correct kept."""

from __future__ import annotations

import re
import textwrap

from geak_core.api.components import EvaluatorBase, TuneBudget
from geak_core.api.model import Candidate, EvalResult
from geak_core.engine.plugins import PluginManager
from geak_hw_rocm_mi300.profiles import PROFILES as MI300
from geak_tuner_grid.tuner import GridTuner, GridTunerOptions
from tuner_sources import ADD_KERNEL

ADD = ADD_KERNEL + textwrap.dedent('''\


    def add(x, y, out):
        n = out.numel()
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=256)
        return out
''')
PARENT = Candidate("t-l0-i2", "add", ADD, lineage=0, iteration=2, origin="optimize")


class BlockJudge(EvaluatorBase):
    """A stand-in judge: a block of up to 1024 is correct, and faster the larger it is."""

    def __init__(self, timed: bool = True) -> None:
        self.judged: list[str] = []
        self.timed = timed

    def evaluate(self, task, candidate):
        self.judged.append(candidate.id)
        block = int(re.search(r"BLOCK_SIZE=(\d+)", candidate.code).group(1))
        correct = block <= 1024
        return EvalResult(candidate.task_id, candidate.id, call_ok=True, correct=correct,
                          speedup=block / 256 if correct and self.timed else None,
                          performance_measured=correct and self.timed)

    def evaluate_many(self, jobs):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


def test_without_a_judge_the_ranked_variants_are_returned_as_candidates_of_the_parent():
    result = GridTuner().tune(None, PARENT, None, TuneBudget(candidates=3))
    # 32 and 64 leave threads of the default 4 warps (128) idle: pruned
    assert [v.changes for v in result.variants] == [
        "add_kernel.BLOCK_SIZE 256->128", "add_kernel.BLOCK_SIZE 256->512",
        "add_kernel.BLOCK_SIZE 256->1024"]
    first = result.variants[0]
    assert first.candidate.id == "t-l0-i2-tune1" and first.candidate.parent_id == "t-l0-i2"
    assert (first.candidate.origin, first.candidate.task_id, first.candidate.iteration) == ("tune", "add", 2)
    assert "-    add_kernel[" in first.diff and "BLOCK_SIZE=128)" in first.diff
    assert first.result is None and result.best is None
    assert result.notes == ["no hardware profile: an H100's limits assumed",
                            "left out by the budget: 1 more variants that fit",
                            "no judge: the variants are ranked, not judged"]


def test_the_fastest_correct_variant_is_kept():
    judge = BlockJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=10))
    assert len(judge.judged) == 4  # 128 .. 2048 but 256 itself
    assert result.best.changes == "add_kernel.BLOCK_SIZE 256->1024"
    assert result.best.result.speedup == 4.0
    wrong = [v.changes for v in result.variants if not v.result.correct]
    assert wrong == ["add_kernel.BLOCK_SIZE 256->2048"]


def test_the_candidate_budget_bounds_what_is_judged():
    judge = BlockJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=2))
    assert judge.judged == ["t-l0-i2-tune1", "t-l0-i2-tune2"]
    assert result.best.changes == "add_kernel.BLOCK_SIZE 256->512"


def test_a_spent_time_budget_judges_nothing_more():
    judge = BlockJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=10, seconds=0))
    assert judge.judged == [] and result.best is None
    assert "time budget of 0 s spent" in result.notes


def test_untimed_verdicts_keep_no_best_and_say_why():
    result = GridTuner().tune(None, PARENT, BlockJudge(timed=False), TuneBudget())
    assert result.best is None
    assert "correct variants were not timed (no GPU): no speed to compare" in result.notes


def test_a_candidate_without_knobs_is_left_alone():
    plain = Candidate("c", "add", "def add(x, y):\n    return x + y\n")
    judge = BlockJudge()
    result = GridTuner().tune(None, plain, judge, TuneBudget())
    assert result.variants == [] and judge.judged == [] and "no tunable knobs found" in result.notes


def test_the_hardware_profile_bounds_the_variants():
    tuner = PluginManager().build("tuner", "grid", GridTunerOptions())
    assert isinstance(tuner, GridTuner)
    tuner.set_hardware(next(p for p in MI300 if p.name == "mi300x"))
    code = ADD.replace("BLOCK_SIZE=256)", "BLOCK_SIZE=256, num_warps=4)")
    result = tuner.tune(None, Candidate("c", "add", code), None, TuneBudget(candidates=100))
    warps = [int(re.search(r"num_warps=(\d+)", v.candidate.code).group(1)) for v in result.variants]
    assert max(warps) == 16  # 16 wavefronts of 64 threads: 1024
    assert not any("H100" in note for note in result.notes)
