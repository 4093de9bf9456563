"""A scripted run on one KernelBench-X category, and the per-category view of its results.

The run is recipes/kernelbenchx-categories.toml (the Activation folder of our fixture
checkout, replies written by hand), judged for real under the interpreter. The
interpreter times nothing, so the timed run wraps the real judge in a stopwatch that
adds per-shape latencies and roofline fractions to correct verdicts, as a GPU judge
adds measured ones. Expected figures are computed here from the stored verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.errors import RecipeError
from geak_core.api.model import ShapeResult
from geak_core.cli import main
from geak_core.engine.agent import preflight, run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.store import RunStore

pytest.importorskip("geak_evaluator_triton.evaluator")

from geak_evaluator_triton.evaluator import TritonEvaluator  # noqa: E402

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).resolve().parents[3] / "recipes" / "kernelbenchx-categories.toml"
ACTIVATION = {"softsign", "softsign_fp16"}
# per task: (reference ms, candidate ms, roofline fraction) of each timed shape
SHAPES = {
    "softsign": [(1.0, 0.5, 0.30), (2.0, 1.0, 0.50)],
    "softsign_fp16": [(1.0, 0.8, 0.60), (4.0, 5.0, 0.90)],
}


class Stopwatch(TritonEvaluator):
    """The real judge, with latencies and roofline fractions for correct verdicts."""

    def evaluate(self, task, candidate):
        result = super().evaluate(task, candidate)
        if result.call_ok and result.correct:
            result.shapes = [ShapeResult(f"perf_{i}", reference_ms=ref, candidate_ms=ms, roofline_fraction=f)
                             for i, (ref, ms, f) in enumerate(SHAPES[task.id])]
            result.speedup = result.speedup_sum = (sum(s.reference_ms for s in result.shapes)
                                                   / sum(s.candidate_ms for s in result.shapes))
            result.roofline_fraction = sum(s.roofline_fraction for s in result.shapes) / len(result.shapes)
            result.performance_measured = True
        return result


class StopwatchPlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("stopwatch", Stopwatch)


@pytest.fixture(scope="module")
def timed_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("kbx-categories")
    plugins = PluginManager(extra_plugins=[("stopwatch", StopwatchPlugin())])
    recipe = load_recipe(RECIPE, plugins, overrides=["evaluator.name=stopwatch", f"run.output_dir={out}"])
    summary = run_recipe(recipe, plugins, echo=lambda line: None)
    return out / summary.run_id


def expected_categories(run_dir: Path) -> dict[str, dict]:
    """From the store: per category, tasks with a candidate that ran, with a correct one, and
    the means of the best correct candidate's speedup and roofline fraction."""
    with RunStore(run_dir) as store:
        latest = dict(store.evaluations())
    tasks: dict[str, list] = {}
    for result in latest.values():
        tasks.setdefault(result.task_id, []).append(result)
    assert set(tasks) == ACTIVATION
    best = {}
    for task_id, results in tasks.items():
        correct = [r for r in results if r.call_ok and r.correct and r.speedup is not None]
        if correct:
            best[task_id] = max(correct, key=lambda r: r.speedup)
    n = len(tasks)
    return {"Activation": {
        "tasks": n,
        "call_accuracy": sum(any(r.call_ok for r in rs) for rs in tasks.values()) / n,
        "execution_accuracy": sum(any(r.call_ok and r.correct for r in rs) for rs in tasks.values()) / n,
        "mean_speedup": sum(r.speedup for r in best.values()) / len(best),
        "speedup_tasks": len(best),
        "mean_efficiency": sum(r.roofline_fraction for r in best.values()) / len(best),
        "efficiency_tasks": len(best),
    }}


def test_the_recipe_runs_the_chosen_category_only(tmp_path):
    result = CliRunner().invoke(main, ["run", str(RECIPE), "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in tmp_path.iterdir() if (p / "store.sqlite").exists()]
    with RunStore(run_dir) as store:
        judged = {r.task_id for _, r in store.evaluations()}
    assert judged == ACTIVATION  # scaled_sum (Math) and mul_w8a8 (Quantization) are not run
    shown = CliRunner().invoke(main, ["runs", "show", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    header = next(line for line in lines if line.startswith("by category"))
    assert header.split()[2:] == ["tasks", "call", "acc", "exec", "acc", "mean", "speedup", "max(IOU,", "MFU)"]
    # under the interpreter nothing is timed: both means are over no task
    row = lines[lines.index(header) + 1]
    assert row.split() == ["Activation", "2", "100.00%", "100.00%", "n/m", "(0)", "-", "(0)"]


def test_summary_json_holds_the_per_category_figures_of_the_stored_verdicts(timed_run):
    data = json.loads((timed_run / "summary.json").read_text())
    expected = expected_categories(timed_run)
    assert set(data["by_category"]) == {"Activation"}
    assert data["by_category"]["Activation"] == pytest.approx(expected["Activation"])
    # by hand: softsign 3.0 / 1.5 = 2.0x at (0.3 + 0.5) / 2; softsign_fp16 5.0 / 5.8 at 0.75
    assert data["by_category"]["Activation"]["mean_speedup"] == pytest.approx((2.0 + 5.0 / 5.8) / 2)
    assert data["by_category"]["Activation"]["mean_efficiency"] == pytest.approx((0.4 + 0.75) / 2)


def test_runs_show_prints_and_returns_the_per_category_columns(timed_run):
    expected = expected_categories(timed_run)["Activation"]
    shown = CliRunner().invoke(main, ["runs", "show", str(timed_run)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    header = next(line for line in lines if line.startswith("by category"))
    row = lines[lines.index(header) + 1].split()
    assert row == ["Activation", "2", "100.00%", "100.00%", f"{expected['mean_speedup']:.2f}x", "(2)",
                   f"{100 * expected['mean_efficiency']:.1f}%", "(2)"]
    note = " ".join(lines[lines.index(header) + 2:lines.index(header) + 7])
    assert "over the correct tasks whose best candidate was timed" in note
    as_json = CliRunner().invoke(main, ["runs", "show", str(timed_run), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["summary"]["by_category"]["Activation"] == pytest.approx(expected)


def test_compare_has_a_row_per_run_and_category(timed_run):
    expected = expected_categories(timed_run)["Activation"]
    compared = CliRunner().invoke(main, ["compare", str(timed_run)])
    assert compared.exit_code == 0, compared.output
    table = compared.output.split("\nby category\n", 1)[1].splitlines()
    assert table[1].split() == [timed_run.name, "Activation", "2", "100.00%", "100.00%",
                                f"{expected['mean_speedup']:.2f}x", "(2)",
                                f"{100 * expected['mean_efficiency']:.1f}%", "(2)"]


def test_the_report_has_the_per_category_table_and_efficiency_chart(timed_run, tmp_path):
    pytest.importorskip("pygments")
    expected = expected_categories(timed_run)["Activation"]
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(timed_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    section = out.read_text().split('<section id="breakdowns">', 1)[1].split("</section>", 1)[0]
    assert 'id="chart-category-efficiency"' in section
    table = section.split('data-by="category"', 1)[1].split("</table>", 1)[0]
    assert "<th>max(IOU, MFU)</th>" in table
    assert f'data-col="speedup">{expected["mean_speedup"]:.2f}x (2)<' in table
    assert f'data-col="efficiency">{100 * expected["mean_efficiency"]:.1f}% (2)<' in table


def test_the_export_has_one_row_per_category(timed_run, tmp_path):
    expected = expected_categories(timed_run)["Activation"]
    result = CliRunner().invoke(main, ["export", str(timed_run), "-o", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    assert "wrote 1 categories" in result.output
    (row,) = [json.loads(line) for line in (tmp_path / "x" / "categories.jsonl").read_text().splitlines()]
    assert row["category"] == "Activation" and row["suite"] == "kernelbenchx"
    assert {k: row[k] for k in expected} == pytest.approx(expected)


def _problems(tmp_path, suite_lines):
    """The problems of the recipe with ``suite_lines`` added to its [suite] section."""
    path = tmp_path / "recipe.toml"
    path.write_text(f'include = "{RECIPE}"\n\n[suite]\n' + "\n".join(suite_lines) + "\n")
    plugins = PluginManager()
    with pytest.raises(RecipeError) as caught:
        preflight(load_recipe(path, plugins), plugins)
    return [(p.file, p.line, p.key, p.message, p.hint) for p in caught.value.problems]


def test_an_unknown_category_is_a_located_error_naming_the_known_ones(tmp_path):
    assert _problems(tmp_path, ['categories = ["Activaton"]']) == [(
        str(tmp_path / "recipe.toml"), 4, "suite.categories", "unknown category 'Activaton' of suite 'kernelbenchx'",
        "did you mean 'Activation'? known: Activation, Math, Quantization")]
    ((*_, hint),) = _problems(tmp_path, ['categories = ["Activation", "math"]'])
    assert hint.startswith("did you mean 'Math'?")


def test_a_named_task_outside_the_chosen_categories_is_an_error(tmp_path):
    ((_, line, key, message, _),) = _problems(tmp_path, ['tasks = ["softsign", "scaled_sum"]'])
    assert (line, key) == (4, "suite.tasks")
    assert message == "task 'scaled_sum' is in category 'Math', not one of suite.categories (Activation)"


def test_categories_and_tasks_together_choose_their_intersection():
    plugins = PluginManager()
    recipe = load_recipe(RECIPE, plugins, overrides=['suite.categories=["Activation", "Math"]',
                                                     'suite.tasks=["scaled_sum", "softsign"]'])
    assert [t.id for t in preflight(recipe, plugins)] == ["scaled_sum", "softsign"]
    recipe = load_recipe(RECIPE, plugins, overrides=['suite.categories=["Math", "Quantization"]'])
    assert {t.id for t in preflight(recipe, plugins)} == {"scaled_sum", "mul_w8a8"}
