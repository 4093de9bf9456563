"""The proton profiler: its in-child session (proton's functions replaced, no GPU) and its
tree read back (from a hand-written fixture of proton's structure: tests/fixtures/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import triton.profiler
from geak_core.api.model import ShapeResult
from geak_core.api.profiling import COMPUTE, MEMORY, diagnose
from geak_core.engine.plugins import PluginManager
from geak_hw_nvidia_hopper.profiles import H200
from geak_profiler_proton.child import session
from geak_profiler_proton.profiler import ProtonProfiler

FIXTURE = Path(__file__).parent / "fixtures" / "add_matmul.hatchet"


def _out_with_tree(tmp_path: Path, name: str = "proton.hatchet") -> str:
    shutil.copy(FIXTURE, tmp_path / name)
    return str(tmp_path)


class FakeProton:
    """Records the calls the session makes to proton's start and finalize."""

    def __init__(self, session_id: int | None = 7) -> None:
        self.calls: list[tuple] = []
        self.session_id = session_id

    def start(self, name=None, **kwargs):
        self.calls.append(("start", name, kwargs))
        return self.session_id

    def finalize(self, session=None, output_format=""):
        self.calls.append(("finalize", session, output_format))


@pytest.fixture
def fake_proton(monkeypatch):
    fake = FakeProton()
    monkeypatch.setattr(triton.profiler, "start", fake.start)
    monkeypatch.setattr(triton.profiler, "finalize", fake.finalize)
    return fake


def test_launch_enters_the_child_session_without_a_wrapper():
    launch = ProtonProfiler().launch()
    assert launch.in_child == "geak_profiler_proton.child:session"
    assert launch.wrapper == () and launch.region is False
    module, function = launch.in_child.split(":")
    assert getattr(__import__(module, fromlist=[function]), function) is session


def test_session_starts_proton_into_out_with_the_triton_hook_and_finalizes(fake_proton, tmp_path):
    with session(str(tmp_path)):
        fake_proton.calls.append(("body",))
    assert fake_proton.calls == [
        ("start", str(tmp_path / "proton"), {"hook": "triton"}),
        ("body",),
        ("finalize", 7, "hatchet"),
    ]


def test_session_finalizes_when_the_profiled_calls_raise(fake_proton, tmp_path):
    with pytest.raises(RuntimeError, match="candidate failed"), session(str(tmp_path)):
        raise RuntimeError("candidate failed")
    assert fake_proton.calls[-1] == ("finalize", 7, "hatchet")


def test_session_of_a_disabled_proton_finalizes_nothing(fake_proton, tmp_path):
    fake_proton.session_id = None  # what start() returns under TRITON_PROTON_DISABLE
    with session(str(tmp_path)):
        pass
    assert [c[0] for c in fake_proton.calls] == ["start"]


def test_reads_one_counter_per_launch_with_time_per_call(tmp_path):
    kernels = ProtonProfiler().read(_out_with_tree(tmp_path), "")
    assert [k.name for k in kernels] == ["add_kernel"] * 2 + ["matmul_4096x4096x4096"] * 2 + [
        "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"] * 2
    add, _, matmul, _, cublas, _ = kernels
    assert add.duration_us == pytest.approx(201.856)  # 403712 ns over 2 launches
    assert add.dram_bytes == 805_306_368 and add.flops is None
    assert matmul.duration_us == pytest.approx(212.48)
    assert matmul.flops == 137_438_953_472  # flops16 over 2 launches: 2 * 4096**3
    assert matmul.dram_bytes == 100_663_296
    assert cublas.duration_us == pytest.approx(180.32)
    assert (cublas.flops, cublas.dram_bytes) == (None, None)


def test_everything_proton_cannot_say_is_none(tmp_path):
    add = ProtonProfiler().read(_out_with_tree(tmp_path), "")[0]
    for figure in ("dram_pct", "sm_pct", "tensor_pct", "occupancy_pct", "registers_per_thread",
                   "spilled_bytes", "shared_bytes_per_block", "grid", "block"):
        assert getattr(add, figure) is None, figure
    assert add.stalls == ()


def test_kernels_launched_for_launch_metadata_are_left_out(tmp_path):
    names = {k.name for k in ProtonProfiler().read(_out_with_tree(tmp_path), "")}
    assert not any("vectorized_elementwise_kernel" in n for n in names)


def test_diagnosis_from_declared_bytes_and_flops(tmp_path):
    add1, add2, mm1, mm2, _, _ = ProtonProfiler().read(_out_with_tree(tmp_path), "")
    memory = diagnose([add1, add2], calls=2, hardware=H200, latency_us=205.0)
    assert memory is not None and memory.bound == MEMORY
    assert memory.peak_fraction == pytest.approx(805_306_368 / 201.856e-6 / 4.8e12, rel=1e-3)  # ~0.83
    compute = diagnose([mm1, mm2], calls=2, hardware=H200, latency_us=215.0,
                       case=ShapeResult("4096x4096x4096", dtype="bf16"))
    assert compute is not None and compute.bound == COMPUTE
    assert compute.peak_fraction == pytest.approx(0.6538, abs=1e-3)  # 647 of 989 bf16 TFLOP/s


def test_another_hatchet_name_is_read_when_proton_hatchet_is_absent(tmp_path):
    assert len(ProtonProfiler().read(_out_with_tree(tmp_path, "session.hatchet"), "")) == 6


def test_no_tree_is_a_value_error_quoting_the_child(tmp_path):
    with pytest.raises(ValueError, match="proton wrote no tree .*CUPTI_ERROR_NOT_INITIALIZED"):
        ProtonProfiler().read(str(tmp_path), "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED\n")


@pytest.mark.parametrize("text, said", [
    ("", "is not proton's JSON tree"),
    ("{not json", "is not proton's JSON tree"),
    ('{"frame": {"name": "ROOT"}}', "no list starting with a ROOT node"),
    ("[]", "no list starting with a ROOT node"),
])
def test_malformed_tree_is_a_value_error(tmp_path, text, said):
    (tmp_path / "proton.hatchet").write_text(text)
    with pytest.raises(ValueError, match=said):
        ProtonProfiler().read(str(tmp_path), "")


def test_tree_without_kernels_is_a_value_error(tmp_path):
    root = {"children": [], "frame": {"name": "ROOT", "type": "function"}, "metrics": {}}
    (tmp_path / "proton.hatchet").write_text(json.dumps([root, {}]))
    with pytest.raises(ValueError, match="holds no kernel launch"):
        ProtonProfiler().read(str(tmp_path), "")


def a_gpu_device_file(monkeypatch, present: bool) -> None:
    import types

    found = types.SimpleNamespace(glob=lambda pattern, **kw: ["/dev/nvidia0"] if present else [])
    monkeypatch.setattr("geak_profiler_proton.profiler.glob", found)


def test_usable_where_triton_profiler_imports_and_a_gpu_is_there(monkeypatch):
    a_gpu_device_file(monkeypatch, True)
    assert ProtonProfiler().unusable() == []


def test_unusable_without_a_gpu_device(monkeypatch):
    a_gpu_device_file(monkeypatch, False)
    (reason,) = ProtonProfiler().unusable()
    assert reason.startswith("no NVIDIA or AMD GPU here"), reason


def test_unusable_says_proton_cannot_be_imported(monkeypatch):
    a_gpu_device_file(monkeypatch, True)

    def fail(name):
        raise ImportError("libproton.so: cannot open shared object file")

    monkeypatch.setattr("geak_profiler_proton.profiler.importlib.import_module", fail)
    (reason,) = ProtonProfiler().unusable()
    assert "proton profiler (triton.profiler) cannot be imported" in reason
    assert "libproton.so" in reason


def test_registered_as_the_proton_profiler_for_both_vendors():
    plugins = PluginManager()
    assert plugins.spec("profiler", "proton").plugin == "profiler-proton"
    built = plugins.build("profiler", "proton")
    assert isinstance(built, ProtonProfiler) and built.vendors == ("nvidia", "amd")
