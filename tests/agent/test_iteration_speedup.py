"""The speedup after each round (sequential scaling), through a whole scripted run.

Replies come over loopback HTTP through the real OpenAI backend and every candidate is
judged for real (Triton interpreter on the CPU). The interpreter times nothing, so the
recipe's evaluator is a stopwatch around the real judge: it keeps the judge's verdict and,
for a correct candidate, adds per-shape latencies fixed by its code, as a GPU judge would
add measured ones. The expected figures are computed here from the stored verdicts."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.model import ShapeResult
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.store import RunStore

from tests.agent.test_loop import ADD_BROKEN, ADD_OK, ADD_OK_2, ADD_WRONG, Script, write_recipe
from tests.support.openai_server import OpenAIServer

REFERENCE_MS = (1.0, 4.0)
SHAPE_SHARE = (0.8, 1.6)  # the candidate's latency over the reference's, per shape, at factor 1


def candidate_factor(code: str) -> float:
    """ADD_OK_2 (its mask written `n_elements > offs`) runs in half the time of ADD_OK."""
    return 0.5 if "n_elements > offs" in code else 1.0


class Stopwatch:
    """The real judge, with latencies for correct verdicts; the speedup method is
    ``mean_ratio``, so the headline figure differs from ``sum``."""

    def __init__(self, options=None):
        from geak_evaluator_triton.plugin import build_evaluator

        self.judge = build_evaluator()

    def evaluate(self, task, candidate):
        result = self.judge.evaluate(task, candidate)
        if result.call_ok and result.correct:
            factor = candidate_factor(candidate.code)
            result.shapes = [ShapeResult(f"case{i}", reference_ms=ref, candidate_ms=ref * share * factor)
                             for i, (ref, share) in enumerate(zip(REFERENCE_MS, SHAPE_SHARE, strict=True))]
            ratios = [s.speedup for s in result.shapes]
            result.speedup_sum = sum(REFERENCE_MS) / sum(s.candidate_ms for s in result.shapes)
            result.speedup_geomean = (ratios[0] * ratios[1]) ** 0.5
            result.speedup_mean_ratio = sum(ratios) / len(ratios)
            result.speedup, result.speedup_method = result.speedup_mean_ratio, "mean_ratio"
            result.performance_measured = True
        return result

    def __getattr__(self, name):
        return getattr(self.judge, name)

    def close(self):
        self.judge.close()


class StopwatchPlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("stopwatch", Stopwatch)


def answer(script: Script):
    """softmax is asked for an add kernel's answer every round: it never runs."""
    def reply(request):
        if "softmax_kernel_online" in request.body["messages"][-1]["content"]:
            return ADD_BROKEN
        return script(request)
    return reply


@pytest.fixture(scope="module")
def timed_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("iteration-speedup")
    script = Script(generate=[ADD_WRONG], reflect=[ADD_OK], optimize=[ADD_OK_2])
    with OpenAIServer(answer(script)) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=3, lineages=2, concurrency=2)
        path.write_text(path.read_text().replace('tasks = ["test_add_kernel"]',
                                                 'tasks = ["test_add_kernel", "softmax"]')
                        + '\n[evaluator]\nname = "stopwatch"\n')
        plugins = PluginManager(extra_plugins=[("stopwatch", StopwatchPlugin())])
        summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    return summary, tmp_path / "runs" / summary.run_id


def expected_by_iteration(run_dir, iterations):
    """From the store: per round i, each task's best stored figure among its correct
    verdicts of rounds < i, averaged over the tasks that have one."""
    with RunStore(run_dir) as store:
        latest = dict(store.evaluations())
        candidates = store.candidates()
    fields = ("speedup", "speedup_sum", "speedup_geomean", "speedup_mean_ratio")
    points = []
    for i in range(1, iterations + 1):
        best: dict[str, dict[str, float]] = {}
        for c in candidates:
            result = latest.get(c.id)
            if result is None or not (result.call_ok and result.correct) or c.iteration >= i:
                continue
            for name in fields:
                value = getattr(result, name)
                if value is not None:
                    best.setdefault(c.task_id, {})
                    best[c.task_id][name] = max(best[c.task_id].get(name, value), value)
        means = {name: (sum(b[name] for b in best.values()) / len(best)) if best else None for name in fields}
        points.append({"mean_speedup": means["speedup"], "speedup_tasks": len(best),
                       "speedups": {"sum": means["speedup_sum"], "geomean": means["speedup_geomean"],
                                    "mean_ratio": means["speedup_mean_ratio"]}})
    return points


def _flat(points):
    """Each round's figures in one row: tasks, headline, sum, geomean, mean_ratio."""
    return [[p["speedup_tasks"], p["mean_speedup"], *(p["speedups"][m] for m in ("sum", "geomean", "mean_ratio"))]
            for p in points]


def test_summary_json_holds_the_speedup_after_each_round_beside_the_accuracy(timed_run):
    summary, run_dir = timed_run
    data = json.loads((run_dir / "summary.json").read_text())
    points = data["by_iteration"]
    assert [p["iteration"] for p in points] == [1, 2, 3]
    assert [p["execution_accuracy"] for p in points] == [0.0, 0.5, 0.5]  # softmax never runs
    for found, expected in zip(_flat(points), _flat(expected_by_iteration(run_dir, 3)), strict=True):
        assert found == pytest.approx(expected)
    # by hand: round 1 nothing correct; round 2 ADD_OK; round 3 ADD_OK_2, twice as fast;
    # softmax has no correct kernel and is left out of the mean, not counted as 0
    assert [p["speedup_tasks"] for p in points] == [0, 1, 1]
    mean_ratio = (1 / 0.8 + 1 / 1.6) / 2
    assert [p["mean_speedup"] for p in points] == pytest.approx([None, mean_ratio, 2 * mean_ratio])
    assert [p["speedups"]["sum"] for p in points] == pytest.approx([None, 5 / 7.2, 2 * 5 / 7.2])
    # the last round's figures are the run's
    assert data["speedup_method"] == "mean_ratio" and points[-1]["mean_speedup"] == data["mean_speedup"]
    assert points[-1]["speedups"] == pytest.approx(data["speedups"])
    assert summary.by_iteration == points


def test_runs_show_prints_and_returns_the_speedup_after_each_round(timed_run):
    _, run_dir = timed_run
    points = json.loads((run_dir / "summary.json").read_text())["by_iteration"]
    shown = CliRunner().invoke(main, ["runs", "show", str(run_dir)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    rows = [line for line in lines if line.startswith("  speedup ")]
    # the run's headline aggregate (mean_ratio) first and marked, the other two after it
    assert [row.split()[1] for row in rows] == ["mean_ratio", "sum", "geomean"]
    for row in rows:
        method, figures = row.split()[1], row.split()[2:]
        assert figures == ["n/m"] + [f"{p['speedups'][method]:.2f}x" for p in points[1:]] \
            + (["(headline)"] if method == "mean_ratio" else [])
    assert any(line.startswith("  tasks with speedup  0 1 1  ") for line in lines)
    as_json = CliRunner().invoke(main, ["runs", "show", str(run_dir), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["summary"]["by_iteration"] == points


def test_compare_has_a_speedup_row_per_run_after_each_round(timed_run):
    _, run_dir = timed_run
    points = json.loads((run_dir / "summary.json").read_text())["by_iteration"]
    compared = CliRunner().invoke(main, ["compare", str(run_dir)])
    assert compared.exit_code == 0, compared.output
    table = compared.output.split("speedup after each round", 1)[1].splitlines()
    assert table[2].split()[1:] == ["n/m"] + [f"{p['mean_speedup']:.2f}x" for p in points[1:]]


def test_the_report_draws_the_speedup_after_each_round_from_the_store(timed_run, tmp_path):
    pytest.importorskip("pygments")
    from geak_core.reporting.html_report import scaling_curves, task_stats
    from geak_core.reporting.rundata import load_run

    _, run_dir = timed_run
    run = load_run(run_dir)
    curves = scaling_curves(run, task_stats(run))
    points = json.loads((run_dir / "summary.json").read_text())["by_iteration"]
    assert curves["by_iteration"] == points
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(run_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    scaling = page.split('<section id="scaling">', 1)[1].split("</section>", 1)[0]
    assert 'id="chart-sequential"' in scaling and 'id="chart-sequential-speedup"' in scaling
    assert "no speedup after each iteration" not in scaling
    legend = scaling.split('<svg id="chart-sequential-speedup"', 1)[1].split('<ul class="legend">', 1)[1]
    for method in ("sum", "geomean"):
        assert f"</svg>loop-test: {method}</li>" in legend
    assert "</svg>loop-test: mean_ratio (headline)</li>" in legend
