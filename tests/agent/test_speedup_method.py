"""The headline speedup's aggregate (``[evaluator] speedup_method``): mean_ratio by default,
and the one that picks each task's best candidate, ranks the optimizer's history and makes
the run's headline; sum and geomean kept beside it; stored runs without a method read as sum.

Two candidates whose aggregates disagree: over shapes whose reference latencies are 1 and
4 ms, X takes 0.5 and 4.8 ms (per-shape ratios 2 and 0.83: mean_ratio 1.42, sum 0.94) and Y
1.0 and 3.6 ms (ratios 1 and 1.11: mean_ratio 1.06, sum 1.09). Under mean_ratio (and
geomean) X is the faster, under sum Y.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.lineage import LineageState
from geak_core.api.model import (
    DEFAULT_SPEEDUP_METHOD,
    Candidate,
    EvalResult,
    RunSummary,
    ShapeResult,
)
from geak_core.api.scaling import run_speedup_method, set_speedups
from geak_core.api.tasks import EntryPoint, Task
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.report import format_comparison, format_summary, summarize_task
from geak_core.engine.store import SUMMARY_FILE, RunStore
from geak_core.reporting.rundata import load_run
from geak_evaluator_triton.options import TritonEvaluatorOptions

from tests.agent.test_loop import ADD_OK, ADD_OK_2, Script, write_recipe
from tests.report.timed_run import make_timed_run
from tests.support.openai_server import OpenAIServer

REFERENCE_MS = (1.0, 4.0)
SHARES = {"X": (0.5, 1.2), "Y": (1.0, 0.9), "Z": (2.0, 2.0)}  # candidate over reference latency
ADD_OK_3 = ADD_OK.replace("one chunk per program", "bracketed mask").replace(
    "mask = offs < n_elements", "mask = (offs < n_elements)")
TASK = Task(suite="rocm", id="t", instruction="add", entry_points=[EntryPoint("add_kernel")], harness="m:H")


def shapes(name: str) -> list[ShapeResult]:
    return [ShapeResult(f"case{i}", reference_ms=ref, candidate_ms=ref * share)
            for i, (ref, share) in enumerate(zip(REFERENCE_MS, SHARES[name], strict=True))]


def timed(name: str, method: str) -> EvalResult:
    """A correct verdict on ``name``'s timings, filled as the judge fills them under ``method``."""
    result = EvalResult("t", name, call_ok=True, correct=True, shapes=shapes(name), performance_measured=True)
    return set_speedups(result, method)


# ---------------------------------------------------------------------------
# Defaults, and runs stored before the choice
# ---------------------------------------------------------------------------


def test_mean_ratio_is_the_default_everywhere_a_method_is_named():
    assert DEFAULT_SPEEDUP_METHOD == "mean_ratio"
    assert TritonEvaluatorOptions().speedup_method == "mean_ratio"
    assert EvalResult("t", "c").speedup_method == "mean_ratio"
    assert RunSummary("r", "finished").speedup_method == "mean_ratio"
    assert run_speedup_method([]) == "mean_ratio"
    # sum and geomean stay selectable; anything else is refused
    for method in ("sum", "geomean"):
        assert TritonEvaluatorOptions(speedup_method=method).validate() == []
    assert TritonEvaluatorOptions(speedup_method="median").validate()


def test_the_judge_keeps_every_aggregate_and_heads_with_the_chosen_one():
    for method, headline in (("mean_ratio", (2.0 + 1 / 1.2) / 2), ("sum", 5.0 / 5.3),
                             ("geomean", (2.0 / 1.2) ** 0.5)):
        result = timed("X", method)
        assert result.speedup_method == method and result.speedup == pytest.approx(headline)
        assert (result.speedup_sum, result.speedup_geomean, result.speedup_mean_ratio) == pytest.approx(
            (5.0 / 5.3, (2.0 / 1.2) ** 0.5, (2.0 + 1 / 1.2) / 2))
    with pytest.raises(ValueError):
        set_speedups(EvalResult("t", "c"), "median")


def test_a_verdict_or_summary_stored_without_a_method_reads_as_sum():
    old = EvalResult("t", "c", speedup=1.5).to_dict()
    del old["speedup_method"]
    assert EvalResult.from_dict(old).speedup_method == "sum"
    assert EvalResult.from_dict({**old, "speedup_method": "geomean"}).speedup_method == "geomean"
    summary = RunSummary("r", "finished", mean_speedup=1.5).to_dict()
    del summary["speedup_method"]
    assert RunSummary.from_dict(summary).speedup_method == "sum"
    assert "mean speedup 1.50x (sum: sum of baseline latencies" in format_summary(RunSummary.from_dict(summary))


def _strip_methods(run_dir):
    """Make a stored run look like one written before verdicts and summaries named a method."""
    with sqlite3.connect(run_dir / "store.sqlite") as db:
        rows = db.execute("SELECT rowid, result FROM evaluations").fetchall()
        for rowid, text in rows:
            data = json.loads(text)
            data.pop("speedup_method", None)
            db.execute("UPDATE evaluations SET result = ? WHERE rowid = ?", (json.dumps(data), rowid))
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    del summary["speedup_method"]
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary))
    recipe = run_dir / "recipe.toml"
    recipe.write_text(recipe.read_text().replace('speedup_method = "sum"\n', ""))


def test_an_old_run_still_loads_and_shows_as_sum(tmp_path):
    run_dir = make_timed_run(tmp_path, "old", method="sum")
    _strip_methods(run_dir)
    with RunStore(run_dir) as store:
        verdicts = [r for _, r in store.evaluations()]
    assert verdicts and {r.speedup_method for r in verdicts} == {"sum"}
    run = load_run(run_dir)
    assert run.summary is not None and run.summary.speedup_method == "sum"
    assert run.speedup_method == "sum"
    shown = CliRunner().invoke(main, ["runs", "show", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    assert "(sum: sum of baseline latencies over sum of candidate latencies, as GEAK-eval's code" in shown.output
    out = tmp_path / "export"
    exported = CliRunner().invoke(main, ["export", str(run_dir), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert "speedup (headline): sum" in exported.output
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert {r["speedup_method"] for r in rows if r["speedup"] is not None} == {"sum"}


# ---------------------------------------------------------------------------
# The method ranks: best candidate, optimizer history, lineage best
# ---------------------------------------------------------------------------


def test_the_best_candidate_follows_the_method():
    for method, best in (("mean_ratio", "X"), ("geomean", "X"), ("sum", "Y")):
        summary = summarize_task(TASK, 1, [(0, "X", timed("X", method)), (0, "Y", timed("Y", method))])
        assert summary.best_candidate_id == best, method
        assert summary.best_speedup == timed(best, method).speedup


def test_the_optimizers_history_ranks_by_the_method():
    from geak_optimizer_opro.archive import Archive

    def history(method, size):
        archive = Archive(size)
        for name in ("X", "Y"):
            archive.offer(Candidate(name, "t", f"# {name}\n"), timed(name, method))
        return [e.candidate_id for e in archive.ascending()]

    # shown worst to best, so the prompt ends on the best
    assert history("mean_ratio", 2) == ["Y", "X"] and history("sum", 2) == ["X", "Y"]
    # a full archive keeps the better one
    assert history("mean_ratio", 1) == ["X"] and history("sum", 1) == ["Y"]


def test_the_lineage_best_follows_the_method():
    from geak_agent_geak.policy import GeakPolicy
    from geak_core.api.components import RoundPlan

    for method, best in (("mean_ratio", "X"), ("sum", "Y")):
        state = LineageState(TASK, 0)
        policy = GeakPolicy()
        for name in ("X", "Y"):
            policy.after_round(state, RoundPlan("optimize"), [(Candidate(name, "t", f"# {name}\n"), timed(name, method))])
        assert state.best is not None and state.best.id == best, method
        assert policy.next_round(state).kind == "optimize" and state.last is not None and state.last.id == best


# ---------------------------------------------------------------------------
# End to end: the recipe's [evaluator] speedup_method
# ---------------------------------------------------------------------------


def code_name(code: str) -> str:
    if "n_elements > offs" in code:
        return "Y"
    if "(offs < n_elements)" in code:
        return "Z"
    return "X"


class Stopwatch:
    """The real judge (its options the recipe's ``[evaluator]`` table), with fixed latencies
    for correct verdicts, aggregated as the judge does under its ``speedup_method``."""

    def __init__(self, options: TritonEvaluatorOptions | None = None):
        from geak_evaluator_triton.plugin import build_evaluator

        self.options = options or TritonEvaluatorOptions()
        self.judge = build_evaluator(self.options)

    def evaluate(self, task, candidate):
        result = self.judge.evaluate(task, candidate)
        if result.call_ok and result.correct:
            result.shapes = shapes(code_name(candidate.code))
            result.performance_measured = True
            set_speedups(result, self.options.speedup_method)
        return result

    def __getattr__(self, name):
        return getattr(self.judge, name)

    def close(self):
        self.judge.close()


class StopwatchPlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("stopwatch", Stopwatch, options=TritonEvaluatorOptions)


def run_with(tmp_path, method: str | None):
    """generate X, optimize Y, optimize Z (slowest) from the lineage's best: one task, one lineage."""
    script = Script(generate=[ADD_OK], optimize=[ADD_OK_2, ADD_OK_3])
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=3)
        chosen = f'speedup_method = "{method}"\n' if method else ""
        path.write_text(path.read_text() + f'\n[evaluator]\nname = "stopwatch"\n{chosen}')
        plugins = PluginManager(extra_plugins=[("stopwatch", StopwatchPlugin())])
        summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    return summary, tmp_path / "runs" / summary.run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same scripted run under the default method and under sum."""
    return {method: run_with(tmp_path_factory.mktemp(method or "default"), method)
            for method in (None, "sum")}


def _candidates(run_dir):
    with RunStore(run_dir) as store:
        return {c.iteration: c for c in store.candidates()}


def test_changing_the_method_changes_the_headline_and_the_best_candidate(runs):
    for method, best, expected in ((None, 0, "mean_ratio"), ("sum", 1, "sum")):
        summary, run_dir = runs[method]
        assert summary.speedup_method == expected
        assert json.loads((run_dir / SUMMARY_FILE).read_text())["speedup_method"] == expected
        candidates = _candidates(run_dir)
        (task,) = summary.tasks
        assert task.best_candidate_id == candidates[best].id, method
        headline = timed(code_name(candidates[best].code), expected).speedup
        assert task.best_speedup == pytest.approx(headline) and summary.mean_speedup == pytest.approx(headline)
        # every aggregate kept beside it, each task's best under each
        assert task.best_speedups == pytest.approx({"sum": 5.0 / 4.6, "geomean": (2.0 / 1.2) ** 0.5,
                                                    "mean_ratio": (2.0 + 1 / 1.2) / 2})
        assert summary.speedups == pytest.approx(task.best_speedups)
        # the speedup after each round, under every aggregate, the headline among them
        points = summary.by_iteration
        assert [p["speedup_tasks"] for p in points] == [1, 1, 1]
        assert points[-1]["mean_speedup"] == pytest.approx(headline)
        assert points[-1]["speedups"][expected] == pytest.approx(headline)


def test_a_run_stored_under_sum_is_not_resumed_silently_under_the_new_default(runs):
    from geak_core.api.errors import InputError

    _, run_dir = runs["sum"]
    recipe = run_dir.parents[1] / "recipe.toml"  # the recipe it ran with, less its explicit sum
    recipe.write_text(recipe.read_text().replace('speedup_method = "sum"\n', ""))
    plugins = PluginManager(extra_plugins=[("stopwatch", StopwatchPlugin())])
    with pytest.raises(InputError, match="evaluator.speedup_method: 'sum' -> 'mean_ratio'"):
        run_recipe(load_recipe(recipe, plugins), plugins, resume=str(run_dir), echo=lambda line: None)


def test_changing_the_method_changes_what_the_optimizer_builds_on(runs):
    # round 3 optimises the lineage's best: X under mean_ratio, Y under sum
    for method, parent in ((None, 0), ("sum", 1)):
        candidates = _candidates(runs[method][1])
        assert candidates[2].parent_id == candidates[parent].id, method


def test_the_summaries_name_the_headline_and_show_the_others_beside_it(runs):
    _, mean_dir = runs[None]
    _, sum_dir = runs["sum"]
    shown = CliRunner().invoke(main, ["runs", "show", str(mean_dir)])
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert "(mean_ratio: mean of per-shape latency ratios, as the GEAK paper, over a task's shapes" in text
    line = next(line for line in text.splitlines() if line.startswith("speedup, mean over tasks"))
    assert line.split(": ", 1)[1] == "mean_ratio 1.42x (headline), sum 1.09x, geomean 1.29x"
    rows = [line.split()[1] for line in text.splitlines() if line.startswith("  speedup ")]
    assert rows == ["mean_ratio", "sum", "geomean"]
    summed = CliRunner().invoke(main, ["runs", "show", str(sum_dir)]).output
    assert "(sum: sum of baseline latencies over sum of candidate latencies, as GEAK-eval's code" in summed
    assert [line.split()[1] for line in summed.splitlines() if line.startswith("  speedup ")] == [
        "sum", "geomean", "mean_ratio"]
    compared = CliRunner().invoke(main, ["compare", str(mean_dir), str(sum_dir)])
    assert compared.exit_code == 0, compared.output
    table = compared.output.split("speedup by aggregate", 1)[1].splitlines()
    assert table[1].split() == ["run", "headline", "sum", "geomean", "mean_ratio"]
    assert table[2].split()[1:] == ["mean_ratio", "1.09x", "1.29x", "1.42x"]
    assert table[3].split()[1:] == ["sum", "1.09x", "1.29x", "1.42x"]
    # the main table's speedup column is each run's headline
    rows = {line.split()[0]: line.split() for line in compared.output.splitlines()[1:3]}
    assert rows[mean_dir.name][4] == "1.42x" and rows[sum_dir.name][4] == "1.09x"


def test_the_comparison_of_summaries_names_each_runs_headline():
    a = RunSummary("a", "finished", mean_speedup=1.5, speedups={"sum": 1.2, "geomean": 1.4, "mean_ratio": 1.5})
    b = RunSummary("b", "finished", mean_speedup=1.2, speedup_method="sum",
                   speedups={"sum": 1.2, "geomean": 1.4, "mean_ratio": 1.5})
    lines = format_comparison([("paper", a), ("geak-eval", b)]).split("speedup by aggregate", 1)[1].splitlines()
    assert [line.split()[:3] for line in lines[2:4]] == [["paper", "mean_ratio", "1.20x"],
                                                         ["geak-eval", "sum", "1.20x"]]


def test_the_report_and_the_export_name_the_headline(runs, tmp_path):
    pytest.importorskip("pygments")
    _, mean_dir = runs[None]
    _, sum_dir = runs["sum"]
    out = tmp_path / "report.html"
    made = CliRunner().invoke(main, ["report", str(mean_dir), str(sum_dir), "-o", str(out)])
    assert made.exit_code == 0, made.output
    page = out.read_text()
    summary = page.split('id="summary-table"', 1)[1].split("</table>", 1)[0]
    assert "<th>headline</th>" in summary
    assert '>mean_ratio</td>' in summary and '>sum</td>' in summary
    # the headline's figure is "mean speedup"; the other two aggregates beside it, a line or two
    assert '<span class="agg">sum 1.09x</span> <span class="agg">geomean 1.29x</span></td>' in summary
    assert '<span class="agg">geomean 1.29x</span> <span class="agg">mean_ratio 1.42x</span></td>' in summary
    ablation = page.split('id="ablation-table"', 1)[1].split("</table>", 1)[0]
    assert '<td data-col="headline">mean_ratio</td>' in ablation and '<td data-col="headline">sum</td>' in ablation
    scaling = page.split('<section id="scaling">', 1)[1].split("</section>", 1)[0]
    assert ": mean_ratio (headline)" in scaling and ": sum (headline)" in scaling
    for method, run_dir in ((None, mean_dir), ("sum", sum_dir)):
        folder = tmp_path / f"export-{method}"
        exported = CliRunner().invoke(main, ["export", str(run_dir), "-o", str(folder)])
        assert exported.exit_code == 0, exported.output
        assert f"speedup (headline): {method or 'mean_ratio'}" in exported.output
        rows = [json.loads(line) for line in (folder / "candidates.jsonl").read_text().splitlines()]
        timed_rows = [r for r in rows if r["speedup"] is not None]
        assert timed_rows and {r["speedup_method"] for r in timed_rows} == {method or "mean_ratio"}
        assert all(r["speedup"] == r[f"speedup_{method or 'mean_ratio'}"] for r in timed_rows)
        pairs = [json.loads(line) for line in (folder / "transitions.jsonl").read_text().splitlines()]
        assert all(p["speedup_method"] == (method or "mean_ratio") for p in pairs if p["kind"] == "slow_to_fast")


def test_geak_core_eval_names_the_headline_and_gives_each_aggregate():
    from geak_core.cli.cli_eval import summarize, summary_lines

    for method, mean in (("mean_ratio", ((2.0 + 1 / 1.2) / 2 + (1 + 1 / 0.9) / 2) / 2), ("sum", (5 / 5.3 + 5 / 4.6) / 2)):
        pairs = [(TASK, timed("X", method)), (TASK, timed("Y", method))]
        summary = summarize(pairs, [1], speedup_method=method)
        assert summary["speedup_method"] == method and summary["mean_speedup"] == pytest.approx(mean)
        assert set(summary["speedups"]) == {"sum", "geomean", "mean_ratio"}
        assert summary["speedups"][method] == pytest.approx(mean)
        text = "\n".join(summary_lines(summary))
        assert f"mean speedup {mean:.3f}x ({method})" in text
        assert f"of the correct candidates' {method} speedups" in text
        assert f"by aggregate: {method} {mean:.3f}x (headline)" in text
