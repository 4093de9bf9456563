"""The text summaries (``geak-core run``, ``runs show``, ``compare``, ``ablation``): each task's
best candidate with its speedup against PyTorch eager and its code metrics."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from geak_core.api.model import EvalResult
from geak_core.api.tasks import EntryPoint, Task
from geak_core.cli import main
from geak_core.engine.report import format_comparison, format_summary, summarize_run, summarize_task
from geak_core.kit.code_metrics import code_metrics

SIMPLE = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
"""
BRANCHY = SIMPLE + """

def pick(n):
    if n > 1024:
        return 256
    elif n > 64:
        return 128
    return 64
"""


def _task(task_id: str) -> Task:
    return Task(suite="s", id=task_id, instruction="add", entry_points=[EntryPoint("add_kernel")],
                harness="m:H", difficulty=1, category="Math")


def _correct(task_id: str, cid: str, speedup: float | None, eager: float | None) -> EvalResult:
    return EvalResult(task_id, cid, call_ok=True, correct=True, speedup=speedup, speedup_vs_eager=eager)


def _summary():
    add = summarize_task(_task("add"), 2, [
        (0, "add/L0/I0", _correct("add", "add/L0/I0", 1.5, 3.0)),
        (1, "add/L1/I0", _correct("add", "add/L1/I0", 2.0, 4.0)),  # the best: fastest
    ], codes={"add/L0/I0": SIMPLE, "add/L1/I0": BRANCHY})
    mul = summarize_task(_task("mul"), 2, [
        (0, "mul/L0/I0", EvalResult("mul", "mul/L0/I0", call_ok=True)),
        (1, "mul/L1/I0", _correct("mul", "mul/L1/I0", None, None)),  # untimed: the first correct
    ], codes={"mul/L0/I0": BRANCHY, "mul/L1/I0": SIMPLE})
    return add, mul, summarize_run("run-1", "finished", [add, mul], 2, {"calls": 4})


def test_a_task_summary_carries_its_best_candidates_eager_speedup_and_code_metrics():
    add, mul, _ = _summary()
    assert add.best_candidate_id == "add/L1/I0"
    assert add.best_speedup == 2.0 and add.best_speedup_vs_eager == 4.0
    assert add.best_metrics == code_metrics(BRANCHY).to_dict()
    assert add.best_metrics["cc_mean"] == 2.0  # the kernel (1) and pick (3: if, elif)
    assert mul.best_candidate_id == "mul/L1/I0" and mul.best_speedup_vs_eager is None
    assert mul.best_metrics == code_metrics(SIMPLE).to_dict() and mul.best_metrics["cc_mean"] == 1.0


def test_the_run_summary_averages_the_best_candidates_over_tasks():
    add, mul, summary = _summary()
    assert summary.mean_speedup_vs_eager == 4.0  # mul has no eager figure
    assert summary.code_metrics["cc_mean"] == (2.0 + 1.0) / 2
    mi = (add.best_metrics["maintainability_index"] + mul.best_metrics["maintainability_index"]) / 2
    assert summary.code_metrics["maintainability_index"] == mi


def test_the_task_table_prints_eager_speedup_complexity_and_maintainability():
    add, mul, summary = _summary()
    lines = format_summary(summary).splitlines()
    assert lines[0].endswith("best speedup  vs eager     CC     MI")
    row = {line.split()[0]: line.split() for line in lines[1:3]}
    assert row["add"][-4:] == ["2.00x", "4.00x", "2.0", f"{add.best_metrics['maintainability_index']:.1f}"]
    assert row["mul"][-4:] == ["n/m", "n/m", "1.0", f"{mul.best_metrics['maintainability_index']:.1f}"]
    overall = next(line for line in lines if line.startswith("best correct candidate of each task"))
    assert "speedup against PyTorch eager 4.00x" in overall
    assert "cyclomatic complexity 1.5" in overall  # (2.0 + 1.0) / 2
    assert f"maintainability index {summary.code_metrics['maintainability_index']:.1f}" in overall


def test_the_comparison_table_has_eager_speedup_and_code_metric_columns():
    _, _, summary = _summary()
    lines = format_comparison([("full", summary)]).splitlines()
    header, row = lines[0].split(), lines[1].split()
    at = header.index("vs")
    assert header[at - 1: at + 4] == ["speedup", "vs", "eager", "CC", "MI"]
    # recipe, tasks, call acc, exec acc, speedup, vs eager, CC, MI, pass@1, pass@2
    assert row[0] == "full" and row[5:8] == ["4.00x", "1.5",
                                           f"{summary.code_metrics['maintainability_index']:.1f}"]


def test_a_stored_summary_without_these_figures_still_prints():
    _, _, summary = _summary()
    data = summary.to_dict()
    for task in data["tasks"]:
        del task["best_metrics"], task["best_speedup_vs_eager"]
    del data["code_metrics"], data["mean_speedup_vs_eager"]
    from geak_core.api.model import RunSummary

    old = RunSummary.from_dict(data)
    row = next(line for line in format_summary(old).splitlines() if line.startswith("add"))
    assert row.split()[-4:] == ["2.00x", "n/m", "-", "-"]


def test_a_scripted_runs_summary_and_comparison_say_their_replies_are_scripted():
    from geak_core.api.model import RunSummary
    from geak_core.engine.report import SCRIPTED_NOTE

    scripted = RunSummary(run_id="r1", status="finished", scripted=True)
    real = RunSummary(run_id="r2", status="finished")
    assert format_summary(scripted).splitlines()[0] == SCRIPTED_NOTE
    assert SCRIPTED_NOTE not in format_summary(real)
    table = format_comparison([("quickstart", scripted), ("gpt", real)])
    assert table.splitlines()[-1] == f"quickstart: {SCRIPTED_NOTE}"
    assert SCRIPTED_NOTE not in format_comparison([("gpt", real)])


def test_only_the_replay_backends_scripted_mode_counts_as_scripted():
    from geak_core.engine.report import is_scripted

    assert is_scripted({"backend": "replay", "mode": "scripted", "source": "s.toml"})
    assert not is_scripted({"backend": "replay", "mode": "strict", "source": "runs/r1"})  # a model's replies
    assert not is_scripted({"backend": "openai", "model": "gpt-4.1"}) and not is_scripted(None)


def test_a_summary_written_before_speedups_were_kept_per_round_prints_its_accuracy_only():
    _, _, summary = _summary()
    summary.by_iteration = [{"iteration": 1, "call_accuracy": 1.0, "execution_accuracy": 0.5}]
    text = format_summary(summary)
    assert "  execution accuracy  50.00%" in text
    assert "  speedup " not in text and "tasks with speedup" not in text
    table = format_comparison([("old", summary)])
    assert table.split("speedup after each round", 1)[1].splitlines()[2].split() == ["old", "-"]


def test_the_quickstart_summary_names_its_headline_speedup_and_has_the_speedup_after_each_round(quickstart_run):
    """The quickstart names no method: the default, the paper's mean_ratio, heads its summary.
    Under the interpreter nothing is timed, so every figure is empty, but the fields are there."""
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "quickstart.toml"
    assert "speedup_method" not in recipe.read_text()
    data = json.loads((quickstart_run / "summary.json").read_text())
    assert data["speedup_method"] == "mean_ratio"
    assert data["speedups"] == {"sum": None, "geomean": None, "mean_ratio": None}
    assert [p["iteration"] for p in data["by_iteration"]] == [1, 2, 3]
    for point in data["by_iteration"]:
        assert point["mean_speedup"] is None and point["speedup_tasks"] == 0
        assert point["speedups"] == {"sum": None, "geomean": None, "mean_ratio": None}
    shown = CliRunner().invoke(main, ["runs", "show", str(quickstart_run)])
    assert shown.exit_code == 0, shown.output
    assert "mean speedup n/m (mean_ratio: mean of per-shape latency ratios, as the GEAK paper" in shown.output
    assert "speedup, mean over tasks of the best correct candidate: mean_ratio n/m (headline), sum n/m, " \
           "geomean n/m" in shown.output
