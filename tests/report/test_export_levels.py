"""The export's ``levels`` table: one row per KernelBench level with fast_p against PyTorch
eager, the figures the HTML page shows for the same run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from geak_core.api.scaling import NO_EAGER_EQUIVALENT
from geak_core.cli import main
from geak_core.engine.level_view import level_view
from geak_core.reporting.export import LEVEL_COLUMNS
from geak_core.reporting.html_report import category_tasks, task_stats
from geak_core.reporting.rundata import load_run

from tests.report.timed_run import with_levels


def _export(run_dir, out, fmt="jsonl"):
    result = CliRunner().invoke(main, ["export", str(run_dir), "-o", str(out), "--format", fmt])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_run_with_levels_exports_one_row_per_level_as_the_page_counts_it(timed_runs, tmp_path):
    run_dir = with_levels(timed_runs[0], tmp_path)
    output = _export(run_dir, tmp_path / "x")
    assert "wrote 2 levels" in output
    rows = [json.loads(line) for line in (tmp_path / "x" / "levels.jsonl").read_text().splitlines()]
    assert [list(r) for r in rows] == [[c.name for c in LEVEL_COLUMNS]] * 2
    page = level_view(category_tasks(task_stats(load_run(run_dir))))
    for row in rows:
        figures = page[str(row["level"])]
        assert row["tasks"] == figures["tasks"] and row["mean_speedup"] == pytest.approx(figures["mean_speedup"])
        for key, entry in figures["fast_p"].items():
            assert (row[key], row[f"{key}_tasks"]) == (entry["fraction"], entry["n"])
    one, two = rows
    assert (one["level"], one["fast_0_tasks"], one["eager_unmeasured"]) == (1, 1, 0)
    assert (two["level"], two["fast_0"], two["eager_unmeasured"]) == (2, 0.0, 1)
    assert two["eager_unmeasured_reasons"] == f"1 {NO_EAGER_EQUIVALENT}"


def test_each_candidate_row_names_its_tasks_level(timed_runs, tmp_path):
    _export(with_levels(timed_runs[0], tmp_path), tmp_path / "x")
    rows = [json.loads(line) for line in (tmp_path / "x" / "candidates.jsonl").read_text().splitlines()]
    assert {(r["task"], r["level"]) for r in rows} == {("vector_add", 1), ("matmul", 2)}


def test_the_levels_parquet_carries_the_documented_types(timed_runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    _export(with_levels(timed_runs[0], tmp_path), tmp_path / "x", "parquet")
    table = pq.read_table(tmp_path / "x" / "levels.parquet")
    assert table.column_names == [c.name for c in LEVEL_COLUMNS] and table.num_rows == 2
    assert str(table.schema.field("level").type) == "int64"
    assert str(table.schema.field("fast_1").type) == "double"


def test_a_run_without_levels_writes_no_levels_table(timed_runs, tmp_path):
    output = _export(timed_runs[0], tmp_path / "x")
    assert " levels to " not in output and not (tmp_path / "x" / "levels.jsonl").exists()
