"""The `triton-core` and `hardware` knowledge packs."""

from __future__ import annotations

import dataclasses

import pytest
from geak_core.api.components import HardwareProfile, KnowledgeContext, KnowledgePack
from geak_core.api.tasks import Task
from geak_core.engine.plugins import get_plugin_manager
from geak_knowledge_packs.packs import HardwarePack, TritonCorePack

TASK = Task(suite="s", id="t", instruction="Add two vectors.", entry_points=[], harness="")

AMD = HardwareProfile(
    name="fake-mi300",
    vendor="amd",
    arch="gfx942",
    marketing_name="Fake MI300-like part",
    peak_bandwidth_gbs=4321.5,
    peak_tflops={"fp32": 111.1, "fp16": 888.8, "int8": 1777.6},
    compute_units=256,
    warp_size=64,
    shared_memory_kib=64,
    l2_cache_mib=16.0,
    memory_gib=96.0,
    last_level_cache_mib=128.0,
    tuning_notes=("Keep tiles square on this fixture.",),
)
MI250_LIKE = dataclasses.replace(AMD, name="fake-mi250", arch="gfx90a", last_level_cache_mib=0.0)
NVIDIA = HardwareProfile(
    name="fake-h100",
    vendor="nvidia",
    arch="sm_90",
    marketing_name="Fake Hopper part",
    peak_bandwidth_gbs=2999.0,
    peak_tflops={"fp16": 777.7, "tf32": 333.3},
    compute_units=100,
    warp_size=32,
    shared_memory_kib=200,
    l2_cache_mib=40.0,
    memory_gib=64.0,
    tuning_notes=("Prefer 128x128 tiles on this fixture.",),
)
AMPERE_LIKE = dataclasses.replace(NVIDIA, name="fake-a100", arch="sm_80", tuning_notes=())


def render_hw(profile: HardwareProfile | None) -> str:
    return HardwarePack().render(KnowledgeContext(task=TASK, hardware=profile))


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("name", ["triton-core", "hardware"])
def test_packs_are_registered_and_have_a_title(name: str) -> None:
    pack = get_plugin_manager().build("knowledge_pack", name)
    assert isinstance(pack, KnowledgePack)
    assert pack.title and isinstance(pack.title, str)


@pytest.mark.parametrize(
    "topic",
    [
        "mask=",
        "other=",
        "tl.int64",
        "Coalescing",
        "tl.constexpr",
        "at least 16",
        "int8",
        "input_precision",
        "@triton.autotune",
        "Conflicting meta-parameters",
        "num_warps",
        "num_stages",
        "Persistent",
        "maximum",
        "fp32",
        "tl.make_block_ptr",
        "boundary_check",
        "reset_to_zero",
        "@triton.heuristics",
    ],
)
def test_triton_core_covers(topic: str) -> None:
    assert topic in TritonCorePack().render(KnowledgeContext(task=TASK, hardware=None))


def test_triton_core_stays_under_1500_words() -> None:
    assert 300 < words(TritonCorePack().render(KnowledgeContext(task=TASK, hardware=None))) < 1500


def test_hardware_pack_states_the_profile_figures_and_notes() -> None:
    text = render_hw(AMD)
    for fact in (
        "Fake MI300-like part",
        "gfx942",
        "256 CUs",
        "4,321.5 GB/s",
        "fp32 111.1 TFLOP/s",
        "fp16 888.8 TFLOP/s",
        "int8 1,777.6 TOPS",
        "64 KiB LDS",
        "128 MiB last-level",
        "Keep tiles square on this fixture.",
    ):
        assert fact in text, fact


def test_ridge_points_are_derived_from_the_profile() -> None:
    # 888.8 TFLOP/s / 4321.5 GB/s = 205.7 FLOP per byte
    assert "fp32 26, fp16 206" in render_hw(AMD)


def test_amd_profiles_get_wavefront_lds_and_matrix_core_advice() -> None:
    text = render_hw(AMD)
    for topic in ("64 lanes", "LDS", "MFMA", "matrix_instr_nonkdim", "waves_per_eu", "kpack"):
        assert topic in text
    assert "wgmma" not in text and "TMA" not in text


def test_mi300_class_profiles_explain_xcd_round_robin() -> None:
    text = render_hw(AMD)
    assert "XCD" in text and "round-robin" in text and "float8_e4m3fnuz" in text


def test_mi250_class_profiles_get_the_gcd_note_instead() -> None:
    text = render_hw(MI250_LIKE)
    assert "GCD" in text and "XCD" not in text and "last-level" not in text


def test_nvidia_hopper_profiles_get_warp_tma_wgmma_and_pipelining_advice() -> None:
    text = render_hw(NVIDIA)
    for topic in (
        "32 threads",
        "shared memory",
        "TMA",
        "wgmma",
        "num_stages",
        "Prefer 128x128 tiles on this fixture.",
        "2,999 GB/s",
    ):
        assert topic in text, topic
    assert "waves_per_eu" not in text and "wavefront" not in text


def test_other_nvidia_archs_get_the_general_nvidia_text_only() -> None:
    text = render_hw(AMPERE_LIKE)
    assert "32 threads" in text and "wgmma" not in text and "Notes for this device" not in text


def test_without_a_profile_the_note_is_vendor_neutral_and_short() -> None:
    text = render_hw(None)
    assert "No target accelerator" in text and words(text) < 200
    assert "GB/s" not in text


def test_an_unknown_vendor_gets_its_figures_and_the_neutral_note() -> None:
    odd = dataclasses.replace(AMD, vendor="acme", arch="x1", tuning_notes=())
    text = render_hw(odd)
    assert "4,321.5 GB/s" in text and "Warp size differs by vendor" in text
    assert "No target accelerator" not in text and "MFMA" not in text


@pytest.mark.parametrize("name", ["mi300x", "mi250", "h100", "h200"])
def test_bundled_profiles_render_under_1500_words(name: str) -> None:
    profile = get_plugin_manager().build("hardware_profile", name)
    text = render_hw(profile)
    assert profile.marketing_name in text and words(text) < 1500
    for note in profile.tuning_notes:
        assert note in text
