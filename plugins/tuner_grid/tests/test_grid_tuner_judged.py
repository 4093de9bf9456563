"""The grid tuner with the real judge, under the interpreter: variants are judged like any
candidate (correctness only, no timing on a CPU), so no best is kept and the notes say why."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("geak_evaluator_triton.evaluator")
pytest.importorskip("geak_suite_tritonbench.suite")

from geak_core.api.components import TuneBudget  # noqa: E402
from geak_core.api.model import Candidate  # noqa: E402
from geak_evaluator_triton.evaluator import TritonEvaluator  # noqa: E402
from geak_evaluator_triton.options import TritonEvaluatorOptions  # noqa: E402
from geak_suite_tritonbench.suite import TritonBenchOptions, TritonBenchSuite  # noqa: E402
from geak_tuner_grid.tuner import GridTuner  # noqa: E402

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "suite_tritonbench" / "tests" / "fixtures" / "TritonBench" / "data"


def test_variants_of_a_tritonbench_task_are_judged_correct_but_untimed_on_a_cpu():
    task = TritonBenchSuite(TritonBenchOptions(path=str(DATA))).get("add_vectors")
    parent = Candidate("ref", task.id, Path(task.reference).read_text())
    judge = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", workers=1))
    try:
        result = GridTuner().tune(task, parent, judge, TuneBudget(candidates=2, seconds=300))
    finally:
        judge.close()
    # the model's best block and warps (the launch leaves num_warps at Triton's default: the
    # variant writes it), then (nothing timed) its best neighbour
    assert [v.changes for v in result.variants] == [
        "add_kernel.BLOCK_SIZE 64->2048, add_kernel.num_warps 4->8", "add_kernel.BLOCK_SIZE 64->2048"]
    assert "num_warps=8" in result.variants[0].candidate.code
    assert all(v.result.correct and not v.result.performance_measured for v in result.variants)
    assert all(v.result.candidate_id == v.candidate.id for v in result.variants)
    assert result.best is None
    assert "correct variants were not timed (no GPU): no speed to compare" in result.notes
