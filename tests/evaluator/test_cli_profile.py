"""``geak-core profile``: a file is judged, and profiled only if it is correct; the diagnosis,
its evidence and the counters are printed, the record written with ``-o`` and printed with
``--json``; a wrong candidate exits 1 with its verdict's reason; no usable profiler is bad
input that names the ones looked for."""

from __future__ import annotations

import json
import types

import pytest
from click.testing import CliRunner
from geak_core.cli.cli_profile import profile_command
from judge_support import CHEATS, FIXTURES
from minisuite.profiling import write_tool

REFERENCES = FIXTURES / "minisuite" / "references"


@pytest.fixture
def profile_cli(tmp_path):
    """The command with the mini suite and the stand-in profiler registered; the judge under
    the interpreter."""
    import minisuite
    import minisuite.profiling
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    reset_plugin_manager(PluginManager(extra_plugins=[("minisuite", minisuite), ("fakeprofiler", minisuite.profiling)]))
    tool = write_tool(tmp_path)

    def invoke(*args: str, profiler: tuple[str, ...] = ("--profiler", "fake", "--profiler-option", f"tool={tool}")):
        base = ["--suite", "mini", "--task", "add", "--mode", "interpreter", "--workers", "1",
                "--pythonpath", str(FIXTURES), "--seeds", "0", *profiler]
        return CliRunner().invoke(profile_command, [*base, *args], catch_exceptions=False)

    return invoke


@pytest.mark.slow
def test_a_correct_kernel_is_profiled_and_its_bottleneck_printed(profile_cli, tmp_path):
    out = tmp_path / "profile.json"
    result = profile_cli(str(REFERENCES / "add.py"), "--case", "n64_float16", "-o", str(out))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[-1] == "correct"
    assert lines[1].startswith("profiled by fake on case n64_float16 (1 call, ")
    assert lines[2] == "memory-bound, 72% of its peak"
    assert "  DRAM throughput 71.5 % of peak" in lines and "  compute 12.0 % of peak" in lines
    assert "  add_kernel: 10.0 us, DRAM 72 %, SM 12 %, 32 regs/thread" in lines
    record = json.loads(out.read_text())
    assert record["profiler"] == "fake" and record["case"] == "n64_float16" and record["error"] is None
    assert record["diagnosis"]["bound"] == "memory" and record["kernels"][0]["name"] == "add_kernel"


@pytest.mark.slow
def test_a_wrong_kernel_is_not_profiled_and_exits_1_with_its_reason(profile_cli, tmp_path):
    seen = tmp_path / "seen"
    result = profile_cli(str(CHEATS / "add_unwritten.py"), "--json", "--profiler-option", f"keep={seen}")
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["error"].startswith("only a correct candidate is profiled: ")
    assert record["kernels"] == [] and record["diagnosis"] is None
    assert "not profiled: only a correct candidate is profiled" in result.stderr
    assert not seen.exists(), "nothing was profiled"


def test_without_a_usable_profiler_the_command_names_those_it_looked_for(profile_cli, monkeypatch):
    from geak_core.engine.profiling import PREFERRED_PROFILERS

    # whatever this machine has, each says it cannot run: no tool on PATH, none in the
    # folders the plugins look in, no GPU device file
    nothing = types.SimpleNamespace(glob=lambda pattern, **kw: [])
    monkeypatch.setenv("PATH", "/nonexistent")
    for module in ("geak_profiler_ncu.profiler", "geak_profiler_proton.profiler", "geak_profiler_rocprof.profiler"):
        monkeypatch.setattr(f"{module}.glob", nothing)
    result = profile_cli(str(REFERENCES / "add.py"), profiler=())
    assert result.exit_code == 2
    message = result.stderr
    assert "error: no profiler is usable here (" in message, message
    assert "install one of ncu, proton, rocprof, or name a registered one with --profiler" in message
    for name in PREFERRED_PROFILERS:
        assert f"{name}: " in message, (name, message)
