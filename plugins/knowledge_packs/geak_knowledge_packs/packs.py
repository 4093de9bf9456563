"""The bundled knowledge packs: Triton essentials and the target hardware.

Texts live in ``text/*.md`` next to this module so they can be edited as
prose. Each pack renders to Markdown of at most about 1,500 words.
"""

from __future__ import annotations

from importlib import resources

from geak_core.api.components import HardwareProfile, KnowledgeContext, KnowledgePackBase

_TEXT = resources.files("geak_knowledge_packs") / "text"

NO_PROFILE = "No target accelerator was given, so nothing here is specific to one."

# Order of the peak figures in the hardware facts.
DTYPE_ORDER = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def text(name: str) -> str:
    return (_TEXT / f"{name}.md").read_text(encoding="utf-8").strip()


class TritonCorePack(KnowledgePackBase):
    """What every Triton kernel author needs: masks, offsets, tl.dot, reductions, tuning."""

    title = "Triton essentials"

    def __init__(self, options: object = None) -> None:
        self._text = text("triton_core")

    def render(self, context: KnowledgeContext) -> str:
        return self._text


def _number(value: float) -> str:
    """1307.4 -> "1,307.4", 5300.0 -> "5,300": the profile's figure, grouped, never rounded off."""
    text = f"{value:,.3f}".rstrip("0").rstrip(".")
    return text


def facts(profile: HardwareProfile) -> str:
    """The profile's figures as a bullet list; the ridge points are derived from them."""
    unit = "CUs" if profile.vendor == "amd" else "SMs"
    thread_group = "wavefront" if profile.vendor == "amd" else "warp"
    memory = "LDS" if profile.vendor == "amd" else "shared memory"
    lines = [
        f"- {profile.marketing_name} (`{profile.arch}`): {profile.compute_units} {unit}, "
        f"{thread_group} of {profile.warp_size}, {profile.shared_memory_kib} KiB {memory} per "
        f"{unit[:-1]}, {profile.l2_cache_mib:g} MiB L2"
        + (
            f", {profile.last_level_cache_mib:g} MiB last-level cache"
            if profile.last_level_cache_mib
            else ""
        )
        + f", {profile.memory_gib:g} GiB memory.",
        f"- Peak memory bandwidth: {_number(profile.peak_bandwidth_gbs)} GB/s.",
    ]
    peaks = [d for d in DTYPE_ORDER if d in profile.peak_tflops]
    peaks += sorted(d for d in profile.peak_tflops if d not in DTYPE_ORDER)
    if peaks:
        rates = ", ".join(
            f"{d} {_number(profile.peak_tflops[d])} {'TOPS' if d.startswith('int') else 'TFLOP/s'}"
            for d in peaks
        )
        lines.append(f"- Peak dense compute: {rates}.")
        ridge = [
            f"{d} {profile.peak_tflops[d] * 1e3 / profile.peak_bandwidth_gbs:.0f}"
            for d in ("fp32", "fp16")
            if d in profile.peak_tflops and profile.peak_bandwidth_gbs > 0
        ]
        if ridge:
            lines.append(
                "- Ridge point (FLOPs per byte of memory traffic above which a kernel can be "
                f"compute bound): {', '.join(ridge)}. Elementwise, normalisation, softmax and "
                "reduction kernels sit far below it: they are judged by GB/s."
            )
    return "\n".join(lines)


def vendor_sections(profile: HardwareProfile) -> list[str]:
    """General text for the vendor, then the arch-specific text if there is one."""
    sections = {
        "amd": ["amd", {"gfx942": "amd_gfx942", "gfx90a": "amd_gfx90a"}],
        "nvidia": ["nvidia", {"sm_90": "nvidia_sm_90"}],
    }
    entry = sections.get(profile.vendor.lower())
    if entry is None:
        return [text("neutral")]
    general, by_arch = entry
    out = [text(general)]  # type: ignore[arg-type]
    specific = by_arch.get(profile.arch.lower())  # type: ignore[union-attr]
    if specific:
        out.append(text(specific))
    return out


class HardwarePack(KnowledgePackBase):
    """The target accelerator: its figures, how to tune for its vendor and arch, its notes."""

    title = "Target hardware"

    def __init__(self, options: object = None) -> None:
        pass

    def render(self, context: KnowledgeContext) -> str:
        profile = context.hardware
        if profile is None:
            return NO_PROFILE + " " + text("neutral")
        parts = [facts(profile), *vendor_sections(profile)]
        if profile.tuning_notes:
            parts.append(
                "**Notes for this device.**\n" + "\n".join(f"- {n}" for n in profile.tuning_notes)
            )
        return "\n\n".join(parts)
