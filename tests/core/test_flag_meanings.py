"""-o means --out PATH everywhere; a recipe problem from the command line names what was typed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from geak_core.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "recipes" / "quickstart.toml"


def test_tasks_and_task_show_refuse_o_and_name_option():
    for args in (["tasks", "rocm", "-o", "path=x"], ["task", "show", "rocm/softmax", "-o", "path=x"],
                 ["tasks", "rocm", "-opath=x"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert "-o is not --option here" in result.output and "write --option path=x" in result.output


def test_option_still_reaches_the_suite_and_its_problems_name_it():
    result = CliRunner().invoke(main, ["tasks", "rocm", "--option", "nope=1"])
    assert result.exit_code == 2
    assert "error: --option: [suite.nope] unknown key" in result.output
    assert "-o," not in CliRunner().invoke(main, ["tasks", "--help"]).output
    assert "-o," not in CliRunner().invoke(main, ["task", "show", "--help"]).output


def test_export_kernel_keeps_o_for_its_folder():
    assert "-o, --out DIRECTORY" in CliRunner().invoke(main, ["export-kernel", "--help"]).output


def test_an_unknown_section_from_set_is_blamed_on_the_set_not_the_recipe():
    result = CliRunner().invoke(main, ["run", str(QUICKSTART), "--dry-run", "--set", "nosuch.x=1"])
    assert result.exit_code == 2
    assert "error: --set nosuch.x=1: [nosuch] unknown section" in result.output
    assert "quickstart.toml" not in result.output


def test_a_bad_limit_is_blamed_on_limit_not_set():
    result = CliRunner().invoke(main, ["run", str(QUICKSTART), "--dry-run", "--limit", "-1"])
    assert result.exit_code == 2
    assert "error: --limit -1: [suite.limit] must be >= 0" in result.output
    assert "--set" not in result.output
    both = CliRunner().invoke(main, ["run", str(QUICKSTART), "--dry-run", "--set", "agent.iterations=0",
                                     "--limit", "1"])
    assert both.exit_code == 2 and "--set agent.iterations=0: [agent.iterations]" in both.output
