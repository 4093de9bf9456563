"""The judge's components are found through the plugin manager like any others."""

from __future__ import annotations

import math

import pytest
from geak_core.api.components import Evaluator, HardwareProfile
from geak_core.engine.plugins import PluginManager


@pytest.fixture(scope="module")
def manager():
    return PluginManager()


def test_the_triton_evaluator_is_registered_with_its_options_schema(manager):
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    spec = manager.spec("evaluator", "triton")
    assert spec.options is TritonEvaluatorOptions
    evaluator = spec.build(TritonEvaluatorOptions(mode="interpreter"))
    assert isinstance(evaluator, Evaluator)
    assert hasattr(evaluator, "set_hardware")
    evaluator.close()


def test_invalid_options_are_refused_with_what_would_be_valid():
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    with pytest.raises(ValueError, match="mode must be auto, interpreter or gpu, not 'cuda'"):
        TritonEvaluator(TritonEvaluatorOptions(mode="cuda"))


@pytest.mark.parametrize("name, vendor, units, warp, bandwidth", [
    ("mi250", "amd", 104, 64, 1638.4),
    ("mi300x", "amd", 304, 64, 5300.0),
    ("h100", "nvidia", 132, 32, 3350.0),
    ("h200", "nvidia", 132, 32, 4800.0),
])
def test_hardware_profiles_carry_their_datasheet_figures(manager, name, vendor, units, warp, bandwidth):
    profile = manager.build("hardware_profile", name)
    assert isinstance(profile, HardwareProfile)
    assert (profile.name, profile.vendor, profile.compute_units, profile.warp_size) == (
        name, vendor, units, warp)
    assert profile.peak_bandwidth_gbs == bandwidth
    assert profile.sources and all(len(s) > 20 for s in profile.sources)
    assert profile.tuning_notes
    for dtype in ("fp32", "fp16", "bf16", "int8"):
        assert profile.peak_for(dtype) and math.isfinite(profile.peak_for(dtype))


def test_low_precision_peaks_are_ordered_as_the_hardware_doubles_them(manager):
    for name in ("mi300x", "h100", "h200"):
        peaks = manager.build("hardware_profile", name).peak_tflops
        assert peaks["fp8"] == pytest.approx(2 * peaks["fp16"], rel=1e-3)
        assert peaks["fp16"] == peaks["bf16"] > peaks["tf32"] > peaks["fp32"]
    assert "fp8" not in manager.build("hardware_profile", "mi250").peak_tflops


def test_mi300x_has_its_infinity_cache_and_xcd_notes(manager):
    profile = manager.build("hardware_profile", "mi300x")
    assert profile.last_level_cache_mib == 256.0 and profile.shared_memory_kib == 64
    notes = " ".join(profile.tuning_notes)
    for fact in ("8 XCDs", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "num_stages"):
        assert fact in notes


@pytest.mark.parametrize("device, arch, expected", [
    ("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", "mi300x"),
    ("AMD Instinct MI250X / MI250", "gfx90a:sramecc+:xnack-", "mi250"),
    ("NVIDIA H100 80GB HBM3", "sm_90", "h100"),
    ("NVIDIA H200", "sm_90", "h200"),
    ("NVIDIA H100 PCIe", "sm_90", None),
    ("NVIDIA A100-SXM4-80GB", "sm_80", None),
    ("some unnamed AMD device", "gfx942:sramecc+", "mi300x"),
])
def test_device_names_select_the_matching_profile(manager, device, arch, expected):
    from geak_core.engine.hardware import match_profile

    profiles = [spec.build(None) for spec in manager.components("hardware_profile").values()]
    match = match_profile(profiles, device, arch)
    assert (match.name if match else None) == expected


@pytest.mark.parametrize("device, arch", [
    ("NVIDIA H100 80GB HBM3", "sm_90"), ("NVIDIA H200", "sm_90"), ("AMD Instinct MI300X", "gfx942:sramecc+:xnack-"),
    ("some unnamed AMD device", "gfx942:sramecc+"), ("NVIDIA H100 PCIe", "sm_90"), ("NVIDIA A100-SXM4-80GB", "sm_80"),
])
def test_the_recipes_hardware_and_the_judges_option_resolve_one_profile_for_a_device(manager, monkeypatch,
                                                                                       device, arch):
    """`[hardware] profile = "auto"` (the agent, from the visible GPU) and `[evaluator] hardware
    = "auto"` (the judge, from its own device probe) choose the same profile; a profile the
    judge's option names overrides the one the agent hands it."""
    from types import SimpleNamespace

    import geak_core.engine.agent as agent_module
    import geak_core.engine.plugins as plugins_module
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    monkeypatch.setattr(agent_module, "visible_device", lambda: (device, arch))
    monkeypatch.setattr(plugins_module, "get_plugin_manager", lambda: manager)
    by_recipe = agent_module.resolve_hardware("auto", manager)

    def judge(option):
        evaluator = TritonEvaluator(TritonEvaluatorOptions(mode="interpreter", hardware=option))
        evaluator._runtime = SimpleNamespace(mode="gpu", probe={"devices": [{"name": device, "arch": arch}]},
                                             slots=[])
        return evaluator

    judges = [judge("auto"), judge("mi250"), judge("auto")]
    try:
        by_option = judges[0].resolve_hardware()
        assert (by_option.name if by_option else None) == (by_recipe.name if by_recipe else None)
        judges[1].set_hardware(by_recipe)  # the option names one: the agent's does not replace it
        assert judges[1].resolve_hardware().name == "mi250"
        judges[2].set_hardware(manager.build("hardware_profile", "h200"))  # no option: the agent's is used
        assert judges[2].resolve_hardware().name == "h200"
    finally:
        for evaluator in judges:
            evaluator.close()
