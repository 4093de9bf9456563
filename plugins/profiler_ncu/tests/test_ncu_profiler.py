"""The ncu profiler: its command, where it finds ncu, and its raw CSV read back (from
hand-written fixtures of the documented layout: tests/fixtures/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from geak_core.api.profiling import COMPUTE, LAUNCH, MEMORY, diagnose
from geak_core.engine.plugins import PluginManager
from geak_hw_nvidia_hopper.profiles import H200
from geak_profiler_ncu import profiler as ncu_profiler
from geak_profiler_ncu.profiler import NcuProfiler, NcuProfilerOptions
from geak_profiler_ncu.report import METRICS, STALL_METRIC, STALL_REASONS

FIXTURES = Path(__file__).parent / "fixtures"
SEARCH_FOLDERS = ncu_profiler.search_folders  # before any test replaces it


def _out_with(tmp_path: Path, fixture: str) -> str:
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(FIXTURES / fixture, out / "ncu.csv")
    return str(out)


def _fake_ncu(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ncu"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def no_ncu_anywhere(tmp_path, monkeypatch):
    """An empty PATH and no toolkit folders: whatever this machine has installed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(ncu_profiler, "search_folders", lambda: [])
    return empty


def test_reads_each_launch_in_order_with_units_converted(tmp_path):
    kernels = NcuProfiler().read(_out_with(tmp_path, "add_matmul_sum.ncu.csv"), "")
    assert [k.name for k in kernels] == ["add_kernel", "matmul_kernel", "sum_rows_kernel"]
    add, matmul, _ = kernels
    assert add.duration_us == pytest.approx(199.712)
    assert add.dram_pct == pytest.approx(84.12)
    assert add.dram_bytes == 536_903_680 + 268_451_840
    assert (add.sm_pct, add.tensor_pct, add.occupancy_pct) == (pytest.approx(14.31), 0.0, pytest.approx(87.46))
    assert (add.registers_per_thread, add.spilled_bytes, add.shared_bytes_per_block) == (26, 0, 0)
    assert (add.grid, add.block) == ((65536, 1, 1), (128, 1, 1))
    assert matmul.duration_us == pytest.approx(211.84)
    assert matmul.tensor_pct == pytest.approx(82.57)
    assert matmul.spilled_bytes == 4  # 1 MiB stored to local memory by 262,144 threads
    assert matmul.shared_bytes_per_block == 196_608
    assert (matmul.grid, matmul.block) == ((32, 32, 1), (256, 1, 1))


def test_top_three_stalls_come_largest_first_as_shares_of_all_stalls(tmp_path):
    add, matmul, _ = NcuProfiler().read(_out_with(tmp_path, "add_matmul_sum.ncu.csv"), "")
    # add_kernel's stall ratios sum to 8.68 warps per issue: long_scoreboard 6.12 is 70.5 %
    assert add.stalls == (("long_scoreboard", 70.5), ("lg_throttle", 21.3), ("wait", 4.8))
    assert matmul.stalls == (("wait", 40.0), ("barrier", 25.1), ("long_scoreboard", 17.4))


def test_metrics_reading_n_a_are_none(tmp_path):
    short = NcuProfiler().read(_out_with(tmp_path, "add_matmul_sum.ncu.csv"), "")[2]
    assert short.duration_us == pytest.approx(2.368)
    assert (short.dram_pct, short.tensor_pct, short.occupancy_pct) == (None, None, None)
    assert short.stalls == ()
    assert short.dram_bytes == 4_194_304 + 16_384
    assert short.shared_bytes_per_block == 1024


def test_scaled_units_and_missing_columns(tmp_path):
    (kernel,) = NcuProfiler().read(_out_with(tmp_path, "scaled_units.ncu.csv"), "")
    assert kernel.name == "layer_norm_fwd"
    assert kernel.duration_us == pytest.approx(1.25)  # usecond
    assert kernel.dram_bytes == pytest.approx(3.15e6 + 512e3)  # Mbyte + Kbyte
    assert kernel.shared_bytes_per_block == 48_130  # Kbyte/block
    assert (kernel.grid, kernel.block) == ((264,), (512,))  # launch__*_size without the columns
    assert (kernel.tensor_pct, kernel.occupancy_pct, kernel.spilled_bytes) == (None, None, None)
    assert kernel.stalls == ()


def test_diagnosis_of_the_fixture_kernels(tmp_path):
    kernels = NcuProfiler().read(_out_with(tmp_path, "add_matmul_sum.ncu.csv"), "")
    add, matmul, short = kernels
    memory = diagnose([add], hardware=H200, latency_us=205.0)
    assert memory is not None and memory.bound == MEMORY
    assert memory.peak_fraction == pytest.approx(0.8412)
    compute = diagnose([matmul], hardware=H200, latency_us=215.0)
    assert compute is not None and compute.bound == COMPUTE
    assert compute.peak_fraction == pytest.approx(0.8257)
    launch = diagnose([short], hardware=H200)
    assert launch is not None and launch.bound == LAUNCH


def test_missing_report_is_a_value_error_quoting_what_ncu_printed(tmp_path):
    with pytest.raises(ValueError, match=r"ncu wrote no report at .*ncu\.csv.*==ERROR== Failed to connect"):
        NcuProfiler().read(str(tmp_path), "==ERROR== Failed to connect to process\n")


def test_log_without_a_table_is_a_value_error_quoting_ncu(tmp_path):
    (tmp_path / "ncu.csv").write_text("==PROF== Connected to process 1\n"
                                      "==WARNING== No kernels were profiled.\n")
    with pytest.raises(ValueError, match="no ncu CSV table.*No kernels were profiled"):
        NcuProfiler().read(str(tmp_path), "")


def test_empty_report_and_table_without_rows_are_value_errors(tmp_path):
    report = tmp_path / "ncu.csv"
    report.write_text("")
    with pytest.raises(ValueError, match="no ncu CSV table"):
        NcuProfiler().read(str(tmp_path), "")
    report.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n')
    with pytest.raises(ValueError, match="no kernel in the region"):
        NcuProfiler().read(str(tmp_path), "")


def test_ragged_row_is_a_value_error(tmp_path):
    (tmp_path / "ncu.csv").write_text('"ID","Kernel Name","gpu__time_duration.sum"\n"0","k"\n')
    with pytest.raises(ValueError, match="row 1 has 2 fields, its header 3"):
        NcuProfiler().read(str(tmp_path), "")


def test_launch_wraps_the_child_and_expands_out(tmp_path, monkeypatch):
    script = _fake_ncu(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(script.parent))
    options = NcuProfilerOptions(extra_args=["--cache-control", "none"])
    launch = NcuProfiler(options).launch()
    assert launch.region is True and launch.in_child == "" and dict(launch.env) == {}
    wrapper = launch.expanded("/tmp/p1").wrapper
    assert wrapper[0] == str(script)
    assert wrapper[-2:] == ("--log-file", "/tmp/p1/ncu.csv")
    for flag, value in (("--page", "raw"), ("--print-units", "base"), ("--profile-from-start", "off"),
                        ("--target-processes", "all"), ("--clock-control", "none"),
                        ("--cache-control", "none")):
        assert wrapper[wrapper.index(flag) + 1] == value
    assert "--csv" in wrapper
    metrics = wrapper[wrapper.index("--metrics") + 1].split(",")
    assert metrics == list(METRICS)
    assert {STALL_METRIC.format(r) for r in STALL_REASONS} <= set(metrics)


def test_fake_ncu_on_path_is_found(tmp_path, no_ncu_anywhere):
    script = _fake_ncu(no_ncu_anywhere)
    assert NcuProfiler().unusable() == []
    assert NcuProfiler().launch().wrapper[0] == str(script)


def test_ncu_in_cuda_home_is_found_when_path_has_none(tmp_path, no_ncu_anywhere, monkeypatch):
    monkeypatch.setattr(ncu_profiler, "search_folders", SEARCH_FOLDERS)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    script = _fake_ncu(tmp_path / "cuda" / "bin")
    assert ncu_profiler.find_ncu() == str(script)


def test_no_ncu_says_where_it_looked(no_ncu_anywhere):
    (reason,) = NcuProfiler().unusable()
    assert "ncu (Nsight Compute) was not found: looked on PATH" in reason
    for place in ("$CUDA_HOME/bin", "/usr/local/cuda/bin", "/usr/local/cuda-*/bin", "/opt/nvidia/nsight-compute/*"):
        assert place in reason
    with pytest.raises(FileNotFoundError, match="looked on PATH"):
        NcuProfiler().launch()


def test_a_configured_path_that_is_not_executable_is_the_reason(tmp_path):
    missing = tmp_path / "nowhere" / "ncu"
    (reason,) = NcuProfiler(NcuProfilerOptions(path=str(missing))).unusable()
    assert str(missing) in reason
    script = _fake_ncu(tmp_path / "here")
    assert NcuProfiler(NcuProfilerOptions(path=str(script))).unusable() == []


def test_search_folders_put_the_newest_toolkit_first(monkeypatch):
    monkeypatch.delenv("CUDA_HOME", raising=False)
    found = {"/usr/local/cuda-*/bin": ["/usr/local/cuda-12.9/bin", "/usr/local/cuda-12.10/bin"],
             "/usr/local/cuda/bin": [], "/opt/nvidia/nsight-compute/*": []}
    monkeypatch.setattr(ncu_profiler.glob, "glob", lambda pattern: found[pattern])
    assert ncu_profiler.search_folders() == ["/usr/local/cuda-12.10/bin", "/usr/local/cuda-12.9/bin"]


def test_registered_as_the_ncu_profiler_with_its_options():
    plugins = PluginManager()
    spec = plugins.spec("profiler", "ncu")
    assert (spec.plugin, spec.options) == ("profiler-ncu", NcuProfilerOptions)
    built = plugins.build("profiler", "ncu", NcuProfilerOptions(clock_control="base"))
    assert isinstance(built, NcuProfiler) and built.vendors == ("nvidia",)
