"""The rocprof profiler: its command, where it finds rocprofv3, and its CSV files read back
(from hand-written fixtures of the documented layouts: tests/fixtures/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from geak_core.api.model import ShapeResult
from geak_core.api.profiling import COMPUTE, MEMORY, diagnose
from geak_core.engine.plugins import PluginManager
from geak_hw_rocm_mi300.profiles import MI300X
from geak_profiler_rocprof import profiler as rocprof_profiler
from geak_profiler_rocprof.profiler import RocprofProfiler, RocprofProfilerOptions
from geak_profiler_rocprof.report import COUNTERS

FIXTURES = Path(__file__).parent / "fixtures"


def _out_with(tmp_path: Path, layout: str) -> str:
    out = tmp_path / "out"
    shutil.copytree(FIXTURES / layout, out)
    return str(out)


def _fake_rocprofv3(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "rocprofv3"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def no_rocprofv3_anywhere(tmp_path, monkeypatch):
    """An empty PATH and no ROCm folders: whatever this machine has installed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(rocprof_profiler, "search_folders", lambda: [])
    return empty


def test_reads_the_trace_joined_with_its_counters(tmp_path):
    add, matmul = RocprofProfiler().read(_out_with(tmp_path, "rocm7"), "")
    assert (add.name, matmul.name) == ("add_kernel", "matmul_kernel")
    assert add.duration_us == pytest.approx(180.886)  # End - Start, in ns
    assert add.dram_bytes == (524_416 + 262_208) * 1024  # FETCH_SIZE + WRITE_SIZE, in KiB
    assert (add.sm_pct, add.tensor_pct, add.occupancy_pct) == (6.812345, 0.0, 71.203125)
    assert (add.registers_per_thread, add.spilled_bytes, add.shared_bytes_per_block) == (12, 0, 0)
    assert (add.grid, add.block) == ((65536, 1, 1), (256, 1, 1))  # work-items / workgroup size
    assert matmul.duration_us == pytest.approx(211.444)
    assert matmul.tensor_pct == pytest.approx(68.410256)
    assert matmul.registers_per_thread == 256 + 128  # arch VGPRs + AGPRs
    assert (matmul.spilled_bytes, matmul.shared_bytes_per_block) == (16, 65536)
    assert (matmul.grid, matmul.block) == ((256, 1, 1), (512, 1, 1))
    assert matmul.stalls == () and matmul.dram_pct is None


def test_rocm6_layout_in_a_pass_folder_in_dispatch_order(tmp_path):
    fill, softmax = RocprofProfiler().read(_out_with(tmp_path, "rocm6"), "")
    assert fill.name == "__amd_rocclr_fillBufferAligned"  # started first, listed second
    assert fill.duration_us == pytest.approx(2.331)
    assert softmax.duration_us == pytest.approx(43.736)
    assert softmax.registers_per_thread == 20  # from the counter collection only
    assert softmax.shared_bytes_per_block == 8704  # LDS_Block_Size before Group_Segment_Size
    assert softmax.spilled_bytes == 0  # Private_Segment_Size
    assert softmax.sm_pct == pytest.approx(34.109375)
    assert softmax.dram_bytes is None  # no WRITE_SIZE counted
    assert (softmax.tensor_pct, softmax.occupancy_pct) == (None, None)
    assert (softmax.grid, softmax.block) == ((4096, 1, 1), (256, 1, 1))


def test_counter_collection_alone_still_gives_the_kernels(tmp_path):
    out = Path(_out_with(tmp_path, "rocm7"))
    (out / "geak_kernel_trace.csv").unlink()
    add, matmul = RocprofProfiler().read(str(out), "")
    assert add.duration_us == pytest.approx(180.886)  # its own timestamps
    assert (add.grid, add.block) == ((65536,), (256,))  # totals only
    assert matmul.registers_per_thread == 384


def test_diagnosis_of_the_fixture_kernels(tmp_path):
    add, matmul = RocprofProfiler().read(_out_with(tmp_path, "rocm7"), "")
    memory = diagnose([add], hardware=MI300X, latency_us=190.0)
    assert memory is not None and memory.bound == MEMORY
    assert memory.peak_fraction == pytest.approx(0.840, abs=0.002)  # 4.45 of 5.3 TB/s
    compute = diagnose([matmul], hardware=MI300X, latency_us=220.0,
                       case=ShapeResult("4096x4096x4096", dtype="fp16"))
    assert compute is not None and compute.bound == COMPUTE
    assert compute.peak_fraction == pytest.approx(0.6841, abs=1e-4)  # MfmaUtil


def test_no_files_is_a_value_error_quoting_rocprofv3(tmp_path):
    with pytest.raises(ValueError, match="wrote no .*kernel_trace.csv.*ROCPROFILER_STATUS_ERROR"):
        RocprofProfiler().read(str(tmp_path), "E: ROCPROFILER_STATUS_ERROR_AGENT_NOT_FOUND\n")


def test_empty_or_foreign_csv_is_a_value_error(tmp_path):
    trace = tmp_path / "geak_kernel_trace.csv"
    trace.write_text("")
    with pytest.raises(ValueError, match="lacks the column.*empty file"):
        RocprofProfiler().read(str(tmp_path), "")
    trace.write_text('"Kind","Kernel_Name"\n"KERNEL_DISPATCH","k"\n')
    with pytest.raises(ValueError, match="lacks the column"):
        RocprofProfiler().read(str(tmp_path), "")


def test_trace_without_dispatches_is_a_value_error(tmp_path):
    header = (FIXTURES / "rocm7" / "geak_kernel_trace.csv").read_text().splitlines()[0]
    (tmp_path / "geak_kernel_trace.csv").write_text(header + "\n")
    with pytest.raises(ValueError, match="hold no kernel dispatch"):
        RocprofProfiler().read(str(tmp_path), "")


def test_launch_wraps_the_child_and_expands_out(tmp_path, monkeypatch):
    script = _fake_rocprofv3(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(script.parent))
    launch = RocprofProfiler(RocprofProfilerOptions(extra_args=["--kernel-include-regex", "add"])).launch()
    assert launch.region is False and launch.in_child == ""
    wrapper = launch.expanded("/tmp/p2").wrapper
    assert wrapper[0] == str(script) and wrapper[-1] == "--"
    pmc = wrapper.index("--pmc")
    assert wrapper[pmc + 1: pmc + 1 + len(COUNTERS)] == COUNTERS
    assert wrapper[wrapper.index("--output-format") + 1] == "csv"
    assert wrapper[wrapper.index("-d") + 1] == "/tmp/p2"
    assert wrapper[wrapper.index("-o") + 1] == "geak"
    assert "--kernel-trace" in wrapper
    assert wrapper[-3:-1] == ("--kernel-include-regex", "add")


def test_counters_option_replaces_the_pmc_list(tmp_path, monkeypatch):
    _fake_rocprofv3(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    wrapper = RocprofProfiler(RocprofProfilerOptions(counters=["FETCH_SIZE", "WRITE_SIZE"])).launch().wrapper
    assert wrapper[wrapper.index("--pmc") + 1: wrapper.index("--output-format")] == ("FETCH_SIZE", "WRITE_SIZE")
    with pytest.raises(ValueError, match="at least one counter"):
        RocprofProfilerOptions(counters=[])


def test_fake_rocprofv3_on_path_is_found(no_rocprofv3_anywhere):
    script = _fake_rocprofv3(no_rocprofv3_anywhere)
    assert RocprofProfiler().unusable() == []
    assert RocprofProfiler().launch().wrapper[0] == str(script)


def test_no_rocprofv3_says_where_it_looked(no_rocprofv3_anywhere):
    (reason,) = RocprofProfiler().unusable()
    assert "rocprofv3 was not found: looked on PATH and in /opt/rocm/bin, /opt/rocm-*/bin" in reason
    with pytest.raises(FileNotFoundError, match="looked on PATH"):
        RocprofProfiler().launch()


def test_a_configured_path_that_is_not_executable_is_the_reason(tmp_path):
    missing = tmp_path / "rocm" / "bin" / "rocprofv3"
    (reason,) = RocprofProfiler(RocprofProfilerOptions(path=str(missing))).unusable()
    assert str(missing) in reason


def test_search_folders_put_the_newest_rocm_first(monkeypatch):
    found = {"/opt/rocm/bin": ["/opt/rocm/bin"], "/opt/rocm-*/bin": ["/opt/rocm-6.9.0/bin", "/opt/rocm-6.10.0/bin"]}
    monkeypatch.setattr(rocprof_profiler.glob, "glob", lambda pattern: found[pattern])
    assert rocprof_profiler.search_folders() == ["/opt/rocm/bin", "/opt/rocm-6.10.0/bin", "/opt/rocm-6.9.0/bin"]


def test_registered_as_the_rocprof_profiler_with_its_options():
    plugins = PluginManager()
    spec = plugins.spec("profiler", "rocprof")
    assert (spec.plugin, spec.options) == ("profiler-rocprof", RocprofProfilerOptions)
    built = plugins.build("profiler", "rocprof", RocprofProfilerOptions())
    assert isinstance(built, RocprofProfiler) and built.vendors == ("amd",)
