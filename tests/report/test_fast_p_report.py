"""fast_p and the per-level view on the HTML page (``geak-core report``), computed from the
stored rows as the run's own summary computes them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from geak_core.api.scaling import NO_EAGER_EQUIVALENT, NO_EAGER_SPEEDUP, NOT_TIMED_INTERPRETER
from geak_core.cli import main
from geak_core.reporting.html_report import rates, task_stats
from geak_core.reporting.rundata import load_run

from tests.report.timed_run import with_levels

pytest.importorskip("pygments")


def _page(run_dir, tmp_path) -> str:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(run_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text()



def test_the_pages_fast_p_counts_the_tasks_faster_than_eager(timed_runs):
    stats = {s.task_id: s for s in task_stats(load_run(timed_runs[0]))}
    eager = stats["vector_add"].best_speedup_vs_eager
    found = rates(list(stats.values()))["fast_p"]
    assert {k: (v["n"], v["m"]) for k, v in found.items()} == {
        "fast_0": (1, 2), "fast_1": (int(eager > 1), 2), "fast_2": (int(eager > 2), 2)}
    # matmul is correct but has no eager figure; a summary stored without has_eager cannot say why
    assert found["fast_0"]["unmeasured_reasons"] == {NO_EAGER_SPEEDUP: 1}


def test_the_summary_table_shows_fast_p_and_why_a_correct_task_is_not_counted(timed_runs, tmp_path):
    page = _page(timed_runs[0], tmp_path)
    table = page.split('id="summary-table"', 1)[1].split("</table>", 1)[0]
    assert "<th>fast_p vs eager</th>" in table
    cell = table.split('data-col="fast-p">', 1)[1].split("</td>", 1)[0]
    assert cell.startswith('<span class="agg">fast_0 1/2</span><br><span class="agg">fast_1 ')
    assert "%" not in cell  # one correct task had no eager figure: no share
    assert f"fast_p counts 1 correct task {NO_EAGER_SPEEDUP} as not fast." in page


def test_a_run_whose_tasks_have_levels_gets_the_per_level_table(timed_runs, tmp_path):
    run_dir = with_levels(timed_runs[0], tmp_path)
    stats = {s.task_id: s for s in task_stats(load_run(run_dir))}
    eager = stats["vector_add"].best_speedup_vs_eager
    page = _page(run_dir, tmp_path)
    table = page.split('data-by="level"', 1)[1].split("</table>", 1)[0]
    one = table.split('<tr data-level="1">', 1)[1].split("</tr>", 1)[0]
    assert 'data-col="fast_0">1/1 (100.0%)<' in one
    assert f'data-col="fast_2">{int(eager > 2)}/1 ({100.0 * (eager > 2):.1f}%)<' in one
    two = table.split('<tr data-level="2">', 1)[1].split("</tr>", 1)[0]
    assert 'data-col="fast_0">0/1<' in two
    assert f"level 2: fast_p counts 1 correct task {NO_EAGER_EQUIVALENT} as not fast." in page


def test_a_run_without_levels_has_no_per_level_table(timed_runs, tmp_path):
    assert 'data-by="level"' not in _page(timed_runs[0], tmp_path)


def test_the_quickstart_page_says_its_correct_tasks_were_not_timed(quickstart_run, tmp_path):
    summary = json.loads((quickstart_run / "summary.json").read_text())
    page = _page(quickstart_run, tmp_path)
    entry = summary["fast_p"]["fast_0"]
    cell = page.split('data-col="fast-p">', 1)[1].split("</td>", 1)[0]
    assert cell == "<br>".join(f'<span class="agg">{k} 0/{entry["m"]}</span>' for k in ("fast_0", "fast_1", "fast_2"))
    assert f"fast_p counts {entry['unmeasured']} correct tasks {NOT_TIMED_INTERPRETER} as not fast." in page
