"""geak-core report: what the page holds, computed from stored runs."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest
from click.testing import CliRunner
from geak_core.api.scaling import NO_EAGER_SPEEDUP
from geak_core.cli import main
from geak_core.cli.cli_report import hardware_profiles
from geak_core.reporting.html_report import (
    build_report,
    rates,
    recipe_differences,
    roofline_groups,
    scaling_curves,
    task_stats,
)
from geak_core.reporting.rundata import load_run

from tests.report.timed_run import EAGER_OVER_REFERENCE, make_timed_run

pytest.importorskip("pygments")


def escape_text(text):
    from markupsafe import escape

    return escape(text)


def test_report_of_the_quickstart_is_one_file_that_loads_nothing_from_outside(quickstart_run, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(quickstart_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert not re.search(r"<script[^>]+src=", page) and "<link" not in page
    assert '<svg id="chart-sequential"' in page and '<svg id="chart-parallel"' in page
    for task in ("test_add_kernel", "softmax"):
        assert f'<tr data-task="{task}">' in page and f'<div class="kernel" data-task="{task}">' in page
    assert "every verdict came from the Triton interpreter" in page
    assert "No correct candidate was timed" in page  # no speedup chart from interpreter verdicts
    # its replies are scripted (replay backend): the page says so beside the summary
    from geak_core.engine.report import SCRIPTED_NOTE

    assert 'class="note scripted"' in page and str(escape_text(SCRIPTED_NOTE)) in page
    # every candidate's prompt and reply can be opened (escaped as the page's text)
    from markupsafe import escape

    rows = load_run(quickstart_run).rows
    assert rows
    for row in rows:
        assert f'<details class="transcript" data-candidate="{row.candidate.id}">' in page
        assert row.reply and str(escape(row.reply)) in page
        for message in row.prompt:
            assert str(escape(message["content"])) in page


def test_the_quickstart_tasks_pass_in_their_second_iteration(quickstart_run):
    run = load_run(quickstart_run)
    stats = {s.task_id: s for s in task_stats(run)}
    assert stats["softmax"].first_correct.candidate.id == "softmax/L0/I1"
    assert stats["test_add_kernel"].call_ok and stats["test_add_kernel"].correct
    curves = scaling_curves(run, list(stats.values()))
    # softmax's first attempt ran but was wrong; add's did not run at all
    assert [p["call_accuracy"] for p in curves["by_iteration"]] == [0.5, 1.0, 1.0]
    assert [p["execution_accuracy"] for p in curves["by_iteration"]] == [0.0, 1.0, 1.0]
    assert curves["pass_at_k"] == {1: 1.0}


def test_the_quickstart_under_the_interpreter_has_no_speedup_after_any_round_and_says_so(quickstart_run, tmp_path):
    summary = json.loads((quickstart_run / "summary.json").read_text())
    assert [(p["speedup_tasks"], p["mean_speedup"]) for p in summary["by_iteration"]] == [(0, None)] * 3
    assert all(set(p["speedups"].values()) == {None} for p in summary["by_iteration"])
    shown = CliRunner().invoke(main, ["runs", "show", str(quickstart_run)])
    assert "  speedup             n/m after every round (no correct candidate was timed)" in shown.output
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(quickstart_run), "-o", str(out)]).exit_code == 0
    scaling = out.read_text().split('<section id="scaling">', 1)[1].split("</section>", 1)[0]
    assert 'id="chart-sequential-speedup"' not in scaling
    assert "No correct candidate was timed, so there is no speedup after each iteration to show." in scaling


def test_the_speedup_after_each_round_of_a_timed_run_takes_each_tasks_best_so_far(timed_runs):
    run = load_run(timed_runs[0])
    curves = scaling_curves(run, task_stats(run))
    # both tasks fail in round 1, are fixed in round 2 and made faster in round 3
    assert [p["speedup_tasks"] for p in curves["by_iteration"]] == [0, 2, 2]
    for i, point in enumerate(curves["by_iteration"]):
        best = [max((r.result.speedup_sum for r in run.rows_of(task)
                     if r.result.correct and r.candidate.iteration <= i), default=None)
                for task in ("vector_add", "matmul")]
        found = [b for b in best if b is not None]
        expected = sum(found) / len(found) if found else None
        assert point["speedups"]["sum"] == pytest.approx(expected)
        assert point["mean_speedup"] == pytest.approx(expected)  # the verdicts' own method is sum


def test_the_best_kernel_is_the_fastest_correct_one_and_its_diff_starts_at_the_first_correct(timed_runs):
    run = load_run(timed_runs[0])
    stats = {s.task_id: s for s in task_stats(run)}
    add = stats["vector_add"]
    assert add.correct_lineages == 2 and add.first_correct.candidate.id == "vector_add/L0/I1"
    assert add.best.candidate.id == "vector_add/L0/I2"  # lineage 1 is slower by design
    assert add.best_speedup == max(r.result.speedup for r in add.rows if r.result.correct)
    curves = scaling_curves(run, list(stats.values()))
    assert curves["pass_at_k"] == {1: 1.0, 2: 1.0}
    best_sums = [max(r.result.speedup_sum for r in s.rows if r.result.correct) for s in stats.values()]
    assert curves["speedups"]["sum"] == pytest.approx(sum(best_sums) / 2)
    assert [p["execution_accuracy"] for p in curves["by_iteration"]] == [0.0, 1.0, 1.0]


def test_the_best_candidates_speedup_against_pytorch_eager_is_shown_where_the_task_has_one(timed_runs, tmp_path):
    run = load_run(timed_runs[0])
    stats = {s.task_id: s for s in task_stats(run)}
    add, matmul = stats["vector_add"], stats["matmul"]
    assert add.best_speedup_vs_eager == pytest.approx(EAGER_OVER_REFERENCE * add.best_speedup)
    assert matmul.best_speedup_vs_eager is None
    assert rates(list(stats.values()))["mean_speedup_vs_eager"] == add.best_speedup_vs_eager
    out = tmp_path / "report.html"
    assert CliRunner().invoke(main, ["report", str(timed_runs[0]), "-o", str(out)]).exit_code == 0
    page = out.read_text()
    row = page.split('<tr data-task="vector_add">', 1)[1].split("</tr>", 1)[0]
    assert f"<td class=\"n\">{add.best_speedup:.2f}x</td>\n<td class=\"n\">{add.best_speedup_vs_eager:.2f}x</td>" in row
    row = page.split('<tr data-task="matmul">', 1)[1].split("</tr>", 1)[0]
    assert f"<td class=\"n\">{matmul.best_speedup:.2f}x</td>\n<td class=\"n\">n/m</td>" in row


def test_rooflines_are_grouped_by_the_profile_that_matches_the_device(timed_runs):
    runs = [load_run(p) for p in timed_runs]
    stats = {r.run_id: task_stats(r) for r in runs}
    (group,) = roofline_groups(runs, stats, hardware_profiles())
    assert group.profile is not None and group.profile.name == "h100"
    assert {(p.run, p.task_id) for p in group.points} == {
        (run, task) for run in ("full", "no-retriever") for task in ("vector_add", "matmul")}
    assert {p.bound for p in group.points if p.task_id == "matmul"} == {"compute"}


def test_without_a_matching_profile_the_roofline_says_so(timed_runs):
    runs = [load_run(timed_runs[0])]
    (group,) = roofline_groups(runs, {runs[0].run_id: task_stats(runs[0])}, [])
    assert group.profile is None and "no hardware profile matches it" in group.title


def test_the_ablation_table_names_the_recipe_setting_that_differs(timed_runs):
    runs = [load_run(p) for p in timed_runs]
    assert recipe_differences(runs) == ["retriever.name"]
    page = build_report(runs, hardware_profiles())
    table = page.split('id="ablation-table"', 1)[1].split("</table>", 1)[0]
    settings = re.findall(r'<div data-key="([^"]+)">(.*?)</div>', table)
    assert settings == [("retriever.name", "retriever.<wbr>name = codesim"),
                        ("retriever.name", "retriever.<wbr>name = none")]
    assert 'id="chart-speedup"' in page and 'id="chart-roofline-0"' in page


def test_one_run_has_no_ablation_section(timed_runs):
    page = build_report([load_run(timed_runs[0])], hardware_profiles())
    assert 'id="ablation"' not in page and 'id="chart-roofline-0"' in page


def test_a_note_that_holds_for_several_runs_is_one_banner_naming_them(quickstart_run, timed_runs):
    runs = [load_run(p) for p in (quickstart_run, *timed_runs)]
    summary = build_report(runs, hardware_profiles()).split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    banners = re.findall(r'<p class="note[^"]*"><b>([^<]*)</b>: ([^<]*)</p>', summary)
    assert len(banners) == len({text for _, text in banners})  # each fact once
    # both timed runs lack one eager speedup alike: one banner for the two
    assert ("full, no-retriever", f"fast_p counts 1 correct task {NO_EAGER_SPEEDUP} as not fast.") in banners
    assert [runs for runs, text in banners if "Triton interpreter" in text] == ["quickstart"]


def test_a_run_named_by_its_id_shows_the_id_once_in_its_cell(tmp_path):
    runs = [load_run(make_timed_run(tmp_path, "same")), load_run(make_timed_run(tmp_path, "same"))]
    summary = build_report(runs, hardware_profiles()).split('id="summary-table"', 1)[1].split("</table>", 1)[0]
    for run in runs:  # two runs of one name are told apart by their ids, each shown once
        breakable = run.run_id.replace("-", "-<wbr>")
        assert summary.count(breakable) == 1 and f'title="{run.dir}">{breakable}</td>' in summary


def test_the_report_file_gets_the_mode_the_umask_allows(timed_runs, tmp_path):
    out = tmp_path / "report.html"
    previous = os.umask(0o022)
    try:
        result = CliRunner().invoke(main, ["report", str(timed_runs[0]), "-o", str(out)])
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_report_of_an_unknown_run_is_bad_input(tmp_path):
    result = CliRunner().invoke(main, ["report", "nope", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2 and "no run 'nope'" in result.output


def test_report_and_export_explain_themselves():
    for command, words in (("report", "HTML report"), ("export", "transitions")):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output and words in result.output
