"""The grid tuner: variants as candidates of their own, judged coarse to fine by the judge it is
given within the budget, refined around the fastest, the fastest correct kept."""

from __future__ import annotations

import math
import re
import textwrap

from geak_core.api.components import EvaluatorBase, TuneBudget
from geak_core.api.model import Candidate, EvalResult
from geak_core.engine.plugins import PluginManager
from geak_hw_rocm_mi300.profiles import PROFILES as MI300
from geak_tuner_grid.knobs import find_knobs
from geak_tuner_grid.tuner import GridTuner, GridTunerOptions
from geak_tuner_grid.variants import COARSE_MAX, Limits, Search, generate_variants
from tuner_sources import ADD_KERNEL, DETUNED_ADD

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


def test_without_a_judge_the_search_plan_is_returned_as_candidates_of_the_parent():
    result = GridTuner().tune(None, PARENT, None, TuneBudget(candidates=3))
    # two coarse picks, then the best's neighbour; the launch leaves num_warps at Triton's 4,
    # an implicit knob that the model sets with the block (written into the launch)
    assert [v.changes for v in result.variants] == [
        "add_kernel.BLOCK_SIZE 256->2048, add_kernel.num_warps 4->8", "add_kernel.BLOCK_SIZE 256->1024",
        "add_kernel.BLOCK_SIZE 256->2048"]
    assert [v.changes for v in result.variants] == [
        v.describe() for v in generate_variants(ADD, Limits(), budget=3).variants]
    first = result.variants[0]
    assert first.candidate.id == "t-l0-i2-tune1" and first.candidate.parent_id == "t-l0-i2"
    assert (first.candidate.origin, first.candidate.task_id, first.candidate.iteration) == ("tune", "add", 2)
    assert "-    add_kernel[" in first.diff and "BLOCK_SIZE=2048, num_warps=8)" in first.diff
    assert first.result is None and result.best is None
    # blocks of 128 .. 16384 by warps of 1 .. 32 that fit an H100, less the candidate's own
    # and the 3 above
    assert result.notes == ["no hardware profile: an H100's limits assumed",
                            "left out by the budget: 44 more variants that fit",
                            "no judge: the variants are ranked, not judged"]


def test_the_fastest_correct_variant_is_kept():
    judge = BlockJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=10))
    assert len(judge.judged) == 10  # the budget: blocks by warps give 47 that fit
    assert result.best.changes == "add_kernel.BLOCK_SIZE 256->1024"
    assert result.best.result.speedup == 4.0
    blocks = {v.candidate.id: int(re.search(r"BLOCK_SIZE=(\d+)", v.candidate.code).group(1))
              for v in result.variants}
    assert all(v.result.correct == (blocks[v.candidate.id] <= 1024) for v in result.variants)
    assert sum(not v.result.correct for v in result.variants) >= 3


def test_the_candidate_budget_bounds_what_is_judged():
    judge = BlockJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=3))
    assert judge.judged == ["t-l0-i2-tune1", "t-l0-i2-tune2", "t-l0-i2-tune3"]
    assert [v.changes for v in result.variants] == [
        "add_kernel.BLOCK_SIZE 256->2048, add_kernel.num_warps 4->8",  # wrong
        "add_kernel.BLOCK_SIZE 256->1024", "add_kernel.BLOCK_SIZE 256->2048"]  # wrong
    assert result.best.changes == "add_kernel.BLOCK_SIZE 256->1024"


class ImpossibleJudge(BlockJudge):
    """As ``BlockJudge``, its speedups from per-case timings as the judge aggregates them; a
    block of 1024 is timed on one case faster than the hardware allows (flagged
    ``above_peak``: 40x there, 0.5x on the other), the rest at block / 256 on both."""

    def evaluate(self, task, candidate):
        from geak_core.api.model import ShapeResult
        from geak_core.api.scaling import set_speedups

        result = super().evaluate(task, candidate)
        if result.correct:
            block = int(re.search(r"BLOCK_SIZE=(\d+)", candidate.code).group(1))
            ratios = [(40.0, ["above_peak"]), (0.5, [])] if block == 1024 else [(block / 256, [])] * 2
            result.shapes = [ShapeResult(f"case{i}", reference_ms=1.0, candidate_ms=1.0 / ratio, flags=flags)
                             for i, (ratio, flags) in enumerate(ratios)]
            set_speedups(result, result.speedup_method)
        return result


def test_a_variant_whose_speed_comes_from_a_case_above_the_peak_is_not_chosen():
    judge = ImpossibleJudge()
    result = GridTuner().tune(None, PARENT, judge, TuneBudget(candidates=10))
    by_block = {int(re.search(r"BLOCK_SIZE=(\d+)", v.candidate.code).group(1)): v for v in result.variants}
    assert by_block[1024].result.correct and by_block[1024].result.speedup == 0.5  # 20.25x counted
    # the fastest on the counted cases: a block of 512 (with whichever warps came first), 2.0x
    assert result.best.changes.startswith("add_kernel.BLOCK_SIZE 256->512")
    assert result.best.result.speedup == 2.0


class PeakJudge(EvaluatorBase):
    """Times a variant by its distance, in doublings, from a block of 256 and 2 warps (the
    fastest, 8.0x); records the jobs of each ``evaluate_many`` call."""

    def __init__(self, max_parallel: int = 1) -> None:
        self.max_parallel = max_parallel
        self.batches: list[int] = []

    def evaluate(self, task, candidate):
        block = int(re.search(r"BLOCK_SIZE=(\d+)", candidate.code).group(1))
        warps = int(re.search(r"num_warps=(\d+)", candidate.code).group(1))
        speed = 8 - abs(math.log2(block / 256)) - abs(math.log2(warps / 2))
        return EvalResult(candidate.task_id, candidate.id, call_ok=True, correct=True, speedup=speed,
                          performance_measured=True)

    def evaluate_many(self, jobs):
        jobs = list(jobs)
        self.batches.append(len(jobs))
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)


def _point(search, code):
    values = {k.name: k.value for k in find_knobs(code)}
    return tuple(values[k.name] for k in search.knobs)


def test_after_the_coarse_pass_the_tuner_refines_around_the_fastest_variant_judged():
    """From a detuned add, the model's favourite is a block of 2048 with 8 warps; the judge
    finds 512 with 2 warps the fastest coarse pick, and the refinement goes on from there,
    to the fastest configuration, 256 with 2 warps."""
    detuned = Candidate("d", "add", DETUNED_ADD)
    result = GridTuner().tune(None, detuned, PeakJudge(), TuneBudget(candidates=16))
    search = Search(DETUNED_ADD, Limits())
    coarse, refined = result.variants[:COARSE_MAX], result.variants[COARSE_MAX:]
    assert coarse[0].changes == "add_kernel.BLOCK_SIZE 16->2048, add_kernel.num_warps 1->8"
    fastest = max(coarse, key=lambda v: v.result.speedup)
    assert fastest.changes == "add_kernel.BLOCK_SIZE 16->512, add_kernel.num_warps 1->2"
    assert _point(search, refined[0].candidate.code) in search.neighbours(_point(search, fastest.candidate.code))
    assert result.best.changes == "add_kernel.BLOCK_SIZE 16->256, add_kernel.num_warps 1->2"
    assert result.best.result.speedup == 8.0 and len(result.variants) == 16


def test_refinement_batches_are_as_large_as_the_judge_runs_at_once():
    detuned = Candidate("d", "add", DETUNED_ADD)
    serial, parallel = PeakJudge(max_parallel=1), PeakJudge(max_parallel=4)
    GridTuner().tune(None, detuned, serial, TuneBudget(candidates=16))
    GridTuner().tune(None, detuned, parallel, TuneBudget(candidates=16))
    assert serial.batches == [COARSE_MAX] + [1] * (16 - COARSE_MAX)  # re-centred after each verdict
    assert parallel.batches == [COARSE_MAX, 4, 4]


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
