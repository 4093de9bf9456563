"""fast_p and the per-level view in the run's summary: summary.json, the text of ``geak-core
run`` and ``runs show`` (and its --json), and the ``compare`` / ``ablation`` table."""

from __future__ import annotations

import json

from click.testing import CliRunner
from geak_core.api.model import EvalResult, RunSummary, TaskSummary
from geak_core.api.scaling import NO_EAGER_EQUIVALENT, NOT_TIMED_INTERPRETER
from geak_core.api.tasks import EntryPoint, Task
from geak_core.cli import main
from geak_core.engine.report import format_comparison, format_summary, summarize_run, summarize_task
from geak_core.engine.store import SUMMARY_FILE, RunStore


def _task(task_id: str, level: int | None = None, eager: str = "harness") -> Task:
    return Task(suite="s", id=task_id, instruction="x", entry_points=[EntryPoint("k")], harness="m:H",
                eager=eager, extra={} if level is None else {"level": level})


def _timed(task_id: str, vs_eager: float | None) -> EvalResult:
    return EvalResult(task_id, f"{task_id}/L0/I0", call_ok=True, correct=True, speedup=2.0,
                      speedup_vs_eager=vs_eager, performance_measured=True, mode="gpu")


def _interpreted(task_id: str) -> EvalResult:
    return EvalResult(task_id, f"{task_id}/L0/I0", call_ok=True, correct=True, mode="interpreter")


def _wrong(task_id: str) -> EvalResult:
    return EvalResult(task_id, f"{task_id}/L0/I0", call_ok=True, mode="gpu")


def _run(*judged: tuple[Task, EvalResult]) -> RunSummary:
    tasks = [summarize_task(task, 1, [(0, result.candidate_id, result)]) for task, result in judged]
    return summarize_run("run-1", "finished", tasks, 1, {})


def _timed_run() -> RunSummary:
    """Levels 1 and 2, every correct task timed against eager: 0.8x, 1.5x, 2.5x, one wrong."""
    return _run((_task("a", 1), _timed("a", 0.8)), (_task("b", 1), _timed("b", 1.5)),
                (_task("c", 2), _timed("c", 2.5)), (_task("d", 2), _wrong("d")))


def _cpu_run() -> RunSummary:
    """Under the interpreter: two correct tasks (one without an eager equivalent), one wrong."""
    return _run((_task("a"), _interpreted("a")), (_task("b", eager=""), _interpreted("b")),
                (_task("c"), _wrong("c")))


def test_the_summary_holds_fast_0_1_2_against_eager_over_the_judged_tasks():
    summary = _timed_run()
    assert {k: (v["n"], v["m"]) for k, v in summary.fast_p.items()} == {
        "fast_0": (3, 4), "fast_1": (2, 4), "fast_2": (1, 4)}
    assert summary.fast_p["fast_1"]["fraction"] == 0.5
    assert summary.fast_p["fast_0"]["unmeasured"] == 0


def test_a_skipped_task_is_left_out_of_fast_p():
    summary = _timed_run()
    tasks = summary.tasks + [TaskSummary("e", skipped_reason="needs a GPU")]
    assert summarize_run("run-1", "finished", tasks, 1, {}).fast_p["fast_0"]["m"] == 4


def test_correct_tasks_the_interpreter_did_not_time_are_counted_and_named():
    entry = _cpu_run().fast_p["fast_0"]
    assert (entry["n"], entry["m"], entry["unmeasured"]) == (0, 3, 2)
    assert entry["unmeasured_reasons"] == {NOT_TIMED_INTERPRETER: 1, NO_EAGER_EQUIVALENT: 1}


def test_a_task_summary_keeps_its_level_and_why_it_has_no_eager_speedup():
    summary = _cpu_run()
    assert [(t.has_eager, t.eager_gap) for t in summary.tasks] == [
        (True, NOT_TIMED_INTERPRETER), (False, NO_EAGER_EQUIVALENT), (True, None)]
    assert [t.level for t in _timed_run().tasks] == [1, 1, 2, 2]


def test_the_text_summary_gives_each_fast_p_as_a_count_and_a_share():
    line = next(x for x in format_summary(_timed_run()).splitlines() if x.startswith("fast_p against PyTorch eager"))
    assert line.endswith(": fast_0 3/4 (75.0%), fast_1 2/4 (50.0%), fast_2 1/4 (25.0%)")


def test_a_cpu_run_prints_counts_and_why_not_a_misleading_share():
    line = next(x for x in format_summary(_cpu_run()).splitlines() if x.startswith("fast_p against PyTorch eager"))
    assert line.endswith(": fast_0 0/3, fast_1 0/3, fast_2 0/3 (2 correct tasks without an eager speedup "
                         "(1 not timed: CPU interpreter; 1 without a PyTorch eager equivalent), counted as not fast)")
    assert "%" not in line.partition(": ")[2]


def test_the_per_level_view_holds_each_levels_accuracy_speedup_and_fast_p():
    by_level = _timed_run().by_level
    assert list(by_level) == ["1", "2"]
    one, two = by_level["1"], by_level["2"]
    assert (one["tasks"], one["call_accuracy"], one["execution_accuracy"]) == (2, 1.0, 1.0)
    assert (one["mean_speedup"], one["speedup_tasks"]) == (2.0, 2)
    assert {k: v["n"] for k, v in one["fast_p"].items()} == {"fast_0": 2, "fast_1": 1, "fast_2": 0}
    assert (two["tasks"], two["execution_accuracy"]) == (2, 0.5)
    assert {k: (v["n"], v["m"]) for k, v in two["fast_p"].items()} == {
        "fast_0": (1, 2), "fast_1": (1, 2), "fast_2": (1, 2)}


def test_tasks_without_a_level_are_grouped_last_and_a_run_without_levels_has_no_view():
    summary = _run((_task("a", 3), _timed("a", 1.5)), (_task("b"), _wrong("b")), (_task("c", 1), _wrong("c")))
    assert list(summary.by_level) == ["1", "3", "?"]
    assert _cpu_run().by_level == {}
    assert "by level" not in format_summary(_cpu_run())


def test_only_an_int_level_counts():
    assert _task("a", 2).level == 2
    bad = Task(suite="s", id="a", instruction="x", entry_points=[], harness="m:H", extra={"level": "2"})
    assert bad.level is None


def test_the_text_summary_prints_the_per_level_table():
    lines = format_summary(_timed_run()).splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("by level"))
    assert lines[at].split() == ["by", "level", "tasks", "call", "acc", "exec", "acc", "mean", "speedup",
                                 "fast_0", "fast_1", "fast_2"]
    assert lines[at + 1].split() == ["1", "2", "100.00%", "100.00%", "2.00x", "(2)",
                                     "2/2", "(100.0%)", "1/2", "(50.0%)", "0/2", "(0.0%)"]


def test_a_level_whose_correct_tasks_were_not_timed_says_so_below_the_table():
    summary = _run((_task("a", 1), _interpreted("a")), (_task("b", 2), _timed("b", 1.5)))
    lines = format_summary(summary).splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("by level"))
    assert lines[at + 1].split()[-3:] == ["0/1", "0/1", "0/1"]
    assert lines[at + 3] == "  level 1: 1 correct task not timed: CPU interpreter, counted as not fast"


def test_the_comparison_table_has_a_fast_p_row_per_run_and_a_dash_for_an_old_summary():
    old = RunSummary.from_dict({k: v for k, v in _timed_run().to_dict().items() if k not in ("fast_p", "by_level")})
    table = format_comparison([("gpu", _timed_run()), ("cpu", _cpu_run()), ("old", old)])
    lines = table.split("\nfast_p against PyTorch eager", 1)[1].splitlines()
    assert lines[1].split() == ["recipe", "fast_0", "fast_1", "fast_2"]
    assert lines[2].split() == ["gpu", "3/4", "(75.0%)", "2/4", "(50.0%)", "1/4", "(25.0%)"]
    assert lines[3].split() == ["cpu", "0/3", "0/3", "0/3"]
    assert lines[4].split() == ["old", "-", "-", "-"]
    assert lines[5] == ("  cpu: 2 correct tasks without an eager speedup (1 not timed: CPU interpreter; "
                        "1 without a PyTorch eager equivalent), counted as not fast")


def _stored(tmp_path, summary: dict) -> str:
    store = RunStore.create(tmp_path, "r", '[run]\nname = "r"\n', {})
    store.set_meta("status", "finished")
    store.write_json(SUMMARY_FILE, summary)
    store.close()
    return str(store.dir)


def test_runs_show_prints_fast_p_and_the_levels_and_its_json_holds_them(tmp_path):
    summary = _timed_run()
    run_dir = _stored(tmp_path, summary.to_dict())
    shown = CliRunner().invoke(main, ["runs", "show", run_dir])
    assert shown.exit_code == 0, shown.output
    assert "fast_0 3/4 (75.0%), fast_1 2/4 (50.0%), fast_2 1/4 (25.0%)" in shown.output
    assert "\nby level " in shown.output
    as_json = CliRunner().invoke(main, ["runs", "show", run_dir, "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)["summary"]
    assert data["fast_p"] == summary.fast_p and data["by_level"] == summary.by_level


def test_a_summary_stored_before_fast_p_still_shows_and_compares(tmp_path):
    data = _timed_run().to_dict()
    for key in ("fast_p", "by_level"):
        del data[key]
    for task in data["tasks"]:
        for key in ("level", "has_eager", "eager_gap"):
            del task[key]
    run_dir = _stored(tmp_path, data)
    shown = CliRunner().invoke(main, ["runs", "show", run_dir])
    assert shown.exit_code == 0, shown.output
    assert "fast_p" not in shown.output and "by level" not in shown.output
    compared = CliRunner().invoke(main, ["compare", run_dir])
    assert compared.exit_code == 0, compared.output
    assert compared.output.startswith("run ")  # rows are runs here, recipes in ablation's table
    assert "\nrun " in compared.output.split("speedup by aggregate", 1)[1]
    row = compared.output.split("\nfast_p against PyTorch eager", 1)[1].splitlines()[2]
    assert row.split()[1:] == ["-", "-", "-"]


def test_the_quickstart_on_a_cpu_says_its_correct_tasks_were_not_timed(quickstart_run):
    data = json.loads((quickstart_run / "summary.json").read_text())
    entry = data["fast_p"]["fast_0"]
    correct = sum(t["correct"] for t in data["tasks"] if t["skipped_reason"] is None)
    assert entry["n"] == 0 and entry["unmeasured"] == correct > 0
    assert set(entry["unmeasured_reasons"]) <= {NOT_TIMED_INTERPRETER, NO_EAGER_EQUIVALENT}
    shown = CliRunner().invoke(main, ["runs", "show", str(quickstart_run)])
    assert shown.exit_code == 0, shown.output
    assert f"fast_0 0/{entry['m']}, fast_1 0/{entry['m']}, fast_2 0/{entry['m']} ({correct} correct task" \
        in shown.output
