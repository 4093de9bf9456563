"""NVIDIA H100 SXM5 80GB and H200 SXM 141GB: peak figures and Triton tuning facts.

Peak rates are dense (the datasheets quote Tensor Core rates with 2:4 sparsity;
dense is half of those), from the documents in each profile's ``sources``.
Bandwidths are in GB/s (1e9 bytes/s). The L2 figure is what the product
enables (50 MB); the full GH100 die carries 60 MB.

The device-name patterns are chosen so that an H100 PCIe (114 SMs, 2 TB/s) does
not match the SXM profile.
"""

from __future__ import annotations

from geak_core.api.components import HardwareProfile

_HOPPER_PEAKS = {
    "fp64": 67.0,  # Tensor Core; non-tensor FP64 is 34
    "fp32": 67.0,  # non-tensor FP32
    "tf32": 494.7,  # Tensor Core (989 with sparsity)
    "fp16": 989.4,  # Tensor Core (1979 with sparsity)
    "bf16": 989.4,
    "fp8": 1978.9,  # e4m3fn / e5m2 (3958 with sparsity)
    "int8": 1978.9,  # TOPS
}

_HOPPER_NOTES = (
    "132 SMs; a warp is 32 threads; up to 228 KB shared memory per SM (227 KB usable by one "
    "block); 64K 32-bit registers per SM; 50 MB L2.",
    "tl.dot on sm_90 uses wgmma (warpgroup MMA, 4 warps per warpgroup) when num_warps is a "
    "multiple of 4 and the tile is large enough (BLOCK_M >= 64); num_warps 4 or 8 are the "
    "usual choices.",
    "GEMM pipelining keeps num_stages tiles in shared memory: num_stages * (BLOCK_M*BLOCK_K + "
    "BLOCK_K*BLOCK_N) * element size must fit in 227 KB; num_stages 3-4 with 128x128x64 or "
    "128x256x64 fp16 tiles are common starting points.",
    "TMA: tensor descriptors (host TensorDescriptor or tl.make_tensor_descriptor) move tiles "
    "between global and shared memory asynchronously; device-side descriptors need a global "
    "scratch allocator (triton.set_allocator). Block pointers (tl.make_block_ptr) are not TMA.",
    "fp32 tl.dot defaults to TF32 on NVIDIA; pass input_precision='ieee' for full fp32 "
    "(matches an AMD-made reference) at the fp32 rate.",
    "fp8 uses the OCP formats (torch.float8_e4m3fn, max 448; float8_e5m2); fp8 wgmma wants both "
    "operands K-major, otherwise Triton transposes through shared memory.",
    "Persistent kernels use 132 programs (one per SM); thread-block clusters are requested with "
    "num_ctas > 1.",
    "AMD-only keys (waves_per_eu, matrix_instr_nonkdim, kpack) are rejected by the NVIDIA "
    "backend.",
)

H100 = HardwareProfile(
    name="h100",
    vendor="nvidia",
    arch="sm_90",
    marketing_name="NVIDIA H100 SXM5 80GB (HBM3)",
    peak_bandwidth_gbs=3350.0,
    peak_tflops=dict(_HOPPER_PEAKS),
    compute_units=132,
    warp_size=32,
    shared_memory_kib=228,
    l2_cache_mib=50.0,
    memory_gib=80.0,
    tuning_notes=_HOPPER_NOTES,
    sources=(
        "NVIDIA H100 Tensor Core GPU datasheet (NVIDIA, 2023), H100 SXM column: peak FLOP/s per "
        "type, 80 GB HBM3, 3.35 TB/s",
        "NVIDIA H100 Tensor Core GPU Architecture white paper (NVIDIA, 2022): 132 SMs in the SXM5 "
        "product, 50 MB L2 (60 MB on the full GH100), 228 KB shared memory per SM, TMA, wgmma",
        "NVIDIA Hopper Tuning Guide (CUDA documentation): shared memory capacity per SM and block",
    ),
    device_name_patterns=("H100 80GB HBM3", "H100 SXM", "H100-SXM"),
)

H200 = HardwareProfile(
    name="h200",
    vendor="nvidia",
    arch="sm_90",
    marketing_name="NVIDIA H200 SXM 141GB (HBM3e)",
    peak_bandwidth_gbs=4800.0,
    peak_tflops=dict(_HOPPER_PEAKS),
    compute_units=132,
    warp_size=32,
    shared_memory_kib=228,
    l2_cache_mib=50.0,
    memory_gib=141.0,
    tuning_notes=_HOPPER_NOTES + (
        "Same GH100 compute as the H100 SXM with 141 GB of HBM3e at 4.8 TB/s: memory-bound "
        "kernels gain up to 1.4x, compute-bound ones nothing.",
    ),
    sources=(
        "NVIDIA H200 Tensor Core GPU datasheet (NVIDIA, 2024), H200 SXM column: peak FLOP/s per "
        "type, 141 GB HBM3e, 4.8 TB/s",
        "NVIDIA H100 Tensor Core GPU Architecture white paper (NVIDIA, 2022): the GH100 SM, L2, "
        "shared memory, TMA and wgmma that the H200 shares",
    ),
    device_name_patterns=("H200",),
)

PROFILES = (H100, H200)
