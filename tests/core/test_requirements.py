"""Hardware/software requirements of tasks and cases: who may run what."""

from __future__ import annotations

import pytest
from geak_core.api.tasks import DeviceInfo, Requirement, triton_version, unmet_requirement

CPU = DeviceInfo("interpreter", triton=(3, 6))
H100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", (9, 0), "sm_90", (3, 6))
A100 = DeviceInfo("cuda", "NVIDIA A100", (8, 0), "sm_80", (3, 6))
MI300X = DeviceInfo("hip", "AMD Instinct MI300X", (9, 4), "gfx942", (3, 6))
MI355X = DeviceInfo("hip", "AMD Instinct MI355X", (9, 5), "gfx950", (3, 6))


@pytest.mark.parametrize(
    ("name", "met", "unmet"),
    [
        ("gpu", [H100, MI300X], [CPU]),
        ("interpreter", [CPU], [H100]),
        ("nvidia", [H100], [MI300X, CPU]),
        ("amd", [MI300X], [H100]),
        ("bf16", [H100, A100, MI300X], [CPU]),
        ("tma", [H100], [A100, MI300X]),
        ("cc>=9.0", [H100, MI300X], [A100, CPU]),
        ("fp8", [H100, MI300X, MI355X], [A100, CPU]),
        ("dot_scaled", [H100, MI355X], [MI300X, A100, CPU]),
        ("clusters", [H100], [A100, MI300X]),
        ("block_ptr", [CPU, H100, MI300X], []),
    ],
)
def test_requirement_rules(name, met, unmet):
    for device in met:
        assert unmet_requirement(Requirement(name), device) is None, (name, device.name)
    for device in unmet:
        why = unmet_requirement(Requirement(name, "the reason"), device)
        assert why and name in why and "the reason" in why, (name, device.name)


def test_block_pointers_are_unmet_on_a_triton_that_removed_them():
    newer = DeviceInfo("cuda", "NVIDIA H100", (9, 0), "sm_90", (3, 9))
    why = unmet_requirement(Requirement("block_ptr", "loads through tl.make_block_ptr"), newer)
    assert why == ("needs block_ptr but Triton 3.9 removed tl.make_block_ptr "
                   "(loads through tl.make_block_ptr)")
    assert unmet_requirement(Requirement("block_ptr"), DeviceInfo("interpreter")) is None


def test_an_unknown_requirement_is_never_met():
    assert "unknown requirement 'warp_specialize'" in unmet_requirement(
        Requirement("warp_specialize"), H100)


def test_detect_reports_the_installed_triton(monkeypatch):
    import triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    device = DeviceInfo.detect()
    assert device.kind == "interpreter"
    assert device.triton == triton_version() == tuple(int(x) for x in triton.__version__.split(".")[:2])
