"""A profiled run shown to people: `runs log` prints each profile (or why there is none) and
the lineage it stopped, the export has a row per profile, the HTML report names each profiled
candidate's bottleneck and draws the profiler's measurement on the roofline."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from geak_core.api.profiling import ProfileRecord
from geak_core.cli import main
from geak_core.cli.cli_report import hardware_profiles
from geak_core.reporting.export import PROFILE_COLUMNS, export_run
from geak_core.reporting.html_report import build_report, roofline_groups, task_stats
from geak_core.reporting.rundata import load_run

from tests.agent import test_profiling as agent_run

TASK = agent_run.TASK


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """Generate profiled memory-bound at 92 % of peak, the lineage stopped there."""
    directory = tmp_path_factory.mktemp("stopped")
    chosen = dict(agent_run.COUNTERS)
    agent_run.COUNTERS.update(dram_pct=92.0, sm_pct=20.0)
    try:
        _, store, _ = agent_run.run(directory, stop_at_peak_fraction=0.9)
    finally:
        agent_run.COUNTERS.update(chosen)
    return store.dir


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("failed")
    agent_run.BEHAVIOUR["raise"] = RuntimeError("the tool crashed")
    try:
        _, store, _ = agent_run.run(directory, iterations=1)
    finally:
        agent_run.BEHAVIOUR["raise"] = None
    return store.dir


def test_runs_log_shows_the_profile_its_counters_and_the_stopped_lineage(stopped_run):
    result = CliRunner().invoke(main, ["runs", "log", str(stopped_run)])
    assert result.exit_code == 0, result.output
    after = result.output.split("--- verdict: correct, speedup 2.000x\n", 1)[1]
    assert after.startswith(
        f"--- profile (counters, case {agent_run.CASE}) memory-bound at 92 % of peak\n"
        "  DRAM throughput 92.0 % of peak\n  1340 GB/s moved\n  compute 20.0 % of peak\n"
        "  kernel add_kernel: 8.0 us, DRAM 92 %, SM 20 %, occupancy 55 %, 32 regs/thread\n"
        f"--- lineage stopped at the roofline: {TASK}/L0/I0 is memory-bound at 92 % of peak")
    as_json = CliRunner().invoke(main, ["runs", "log", str(stopped_run), "--json"])
    (entry,) = json.loads(as_json.output)
    assert ProfileRecord.from_dict(entry["profiles"][0]).diagnosis.bound == "memory"
    assert entry["lineage_stopped"].startswith("at the roofline: ")


def test_runs_log_shows_why_a_candidate_has_no_profile(failed_run):
    result = CliRunner().invoke(main, ["runs", "log", str(failed_run)])
    assert "--- profile (counters) profiling failed: RuntimeError: the tool crashed\n" in result.output


def test_the_export_has_a_row_per_profile(stopped_run, tmp_path):
    written = export_run(load_run(stopped_run), tmp_path, "jsonl", [])
    assert written["profiles"] == 1
    (row,) = [json.loads(line) for line in (tmp_path / "profiles.jsonl").read_text().splitlines()]
    assert list(row) == [c.name for c in PROFILE_COLUMNS]
    assert (row["candidate_id"], row["profiler"], row["bound"], row["peak_fraction"], row["error"]) == (
        f"{TASK}/L0/I0", "counters", "memory", 0.92, None)
    assert row["evidence"][0] == "DRAM throughput 92.0 % of peak"
    assert json.loads(row["kernels"])[0]["dram_pct"] == 92.0
    assert json.loads(row["numbers"])["achieved_gbs"] == 1340.0


def test_a_failed_profile_is_a_row_saying_why(failed_run, tmp_path):
    written = export_run(load_run(failed_run), tmp_path, "jsonl", [])
    assert written["profiles"] == 1
    (row,) = [json.loads(line) for line in (tmp_path / "profiles.jsonl").read_text().splitlines()]
    assert (row["bound"], row["error"]) == (None, "profiling failed: RuntimeError: the tool crashed")


def test_the_report_names_the_bottleneck_and_draws_the_measured_point(stopped_run):
    pytest.importorskip("plotly")
    run = load_run(stopped_run)
    profiles = hardware_profiles()
    (group,) = roofline_groups([run], {run.run_id: task_stats(run)}, profiles)
    (measured,) = group.measured
    assert (measured.task_id, measured.profiler, measured.achieved_gbs, measured.bound) == (
        TASK, "counters", 1340.0, "memory")
    page = build_report([run], profiles)
    assert '<td class="bottleneck">memory-bound at 92 % of peak</td>' in page
    assert "measured by the profiler" in page
    assert f"{agent_run.CASE} (profiled, counters)" in page
    assert "its lineage stopped at the roofline" in page
