"""AMD Instinct MI250 and MI300X: peak figures and Triton tuning facts.

Peak rates are dense (no structured sparsity), from the vendor documents named
in each profile's ``sources``. For matrix-capable types the matrix-core
(MFMA) rate is given, since that is what a ``tl.dot`` kernel can reach;
vector rates are stated in the notes. Bandwidths are in GB/s (1e9 bytes/s).

An MI250 is two graphics compute dies (GCDs) and software sees each GCD as its
own device, so the ``mi250`` profile describes one GCD (half a package): that
is the device a kernel runs on. An MI210 is one such GCD.
"""

from __future__ import annotations

from geak_core.api.components import HardwareProfile

MI300X = HardwareProfile(
    name="mi300x",
    vendor="amd",
    arch="gfx942",
    marketing_name="AMD Instinct MI300X (OAM, 192 GB HBM3)",
    peak_bandwidth_gbs=5300.0,
    peak_tflops={
        "fp64": 163.4,  # matrix; vector FP64 is 81.7
        "fp32": 163.4,  # matrix and vector alike
        "tf32": 653.7,  # AMD "TF32" (xf32) matrix rate; see the Triton note below
        "fp16": 1307.4,
        "bf16": 1307.4,
        "fp8": 2614.9,  # e4m3fnuz / e5m2fnuz
        "int8": 2614.9,  # TOPS
    },
    compute_units=304,
    warp_size=64,
    shared_memory_kib=64,
    l2_cache_mib=32.0,  # 4 MB per XCD x 8 XCDs
    memory_gib=192.0,
    last_level_cache_mib=256.0,  # AMD Infinity Cache (memory-side, shared by all XCDs)
    tuning_notes=(
        "304 CUs in 8 XCDs of 38 CUs; a wavefront is 64 lanes, so num_warps=4 means 256 threads.",
        "Workgroups are dispatched round-robin over the 8 XCDs (program i goes to XCD i % 8) and "
        "each XCD has its own 4 MB L2: remap program ids so tiles that share operands run on the "
        "same XCD, e.g. pid = (pid % 8) * (n_programs // 8) + pid // 8 when n_programs % 8 == 0.",
        "Grids that are a multiple of 304 programs (or persistent kernels with 304 programs) keep "
        "every CU busy.",
        "LDS is 64 KiB per CU: (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * element size * buffers must "
        "fit, which bounds GEMM tiles (e.g. 256x256x64 fp16 needs software pipelining care).",
        "AMD-only launch/config keys: waves_per_eu (occupancy hint: target waves per SIMD, limits "
        "registers per wave; 0 lets the compiler choose, 2-4 are common for GEMM and reductions), "
        "matrix_instr_nonkdim (16 selects 16x16 MFMA, 32 selects 32x32; 16 is usually faster for "
        "GEMM), kpack (1 or 2: operand packing along K for MFMA loads; 2 often helps fp16 GEMM).",
        "num_stages: the AMD backend's stream pipeliner prefetches the next K tile when "
        "num_stages=2; larger values cost LDS and registers and rarely help.",
        "Typical fp16/bf16 GEMM configs: BLOCK_M/BLOCK_N 128-256, BLOCK_K 64, GROUP_SIZE_M 4-8, "
        "num_warps 4-8, num_stages 2, matrix_instr_nonkdim 16, kpack 2.",
        "fp8 on MI300X uses the FNUZ formats (torch.float8_e4m3fnuz, max 240; float8_e5m2fnuz), "
        "not the OCP float8_e4m3fn used on NVIDIA.",
        "ROCm Triton of the 3.2 era accepts only input_precision='ieee' for fp32 tl.dot: the "
        "tf32 figure is the hardware rate, not something a fp32 tl.dot reaches there.",
        "Vector (non-matrix) peaks: FP64 81.7 TFLOP/s, FP32 163.4 TFLOP/s; element-wise and "
        "reduction kernels are memory bound (5.3 TB/s HBM3, 256 MB Infinity Cache in front).",
    ),
    sources=(
        "AMD Instinct MI300X Accelerator data sheet (AMD, 2023): CUs, peak FLOP/s per type, "
        "192 GB HBM3, 5.3 TB/s, 256 MB Infinity Cache",
        "AMD CDNA 3 Architecture white paper (AMD, 2023): XCD organisation, 4 MB L2 per XCD, "
        "64 KB LDS per CU, wavefront size, MFMA instruction shapes",
        "AMD ROCm documentation, MI300X workload optimization guide, section on Triton kernel "
        "performance (waves_per_eu, matrix_instr_nonkdim, kpack, num_stages, XCD-aware remapping)",
    ),
    device_name_patterns=("MI300X", "AMD Instinct MI300X", "gfx942"),
)

MI250 = HardwareProfile(
    name="mi250",
    vendor="amd",
    arch="gfx90a",
    marketing_name="AMD Instinct MI250 (one of its two GCDs, as software sees it)",
    peak_bandwidth_gbs=1638.4,  # 3.2768 TB/s per package, halved per GCD
    peak_tflops={
        "fp64": 45.3,  # matrix; vector FP64 is 22.6 (per GCD)
        "fp32": 45.3,  # matrix / packed FP32; plain vector FP32 is 22.6
        "fp16": 181.0,
        "bf16": 181.0,
        "int8": 181.0,  # TOPS
    },
    compute_units=104,
    warp_size=64,
    shared_memory_kib=64,
    l2_cache_mib=8.0,
    memory_gib=64.0,
    last_level_cache_mib=0.0,
    tuning_notes=(
        "Each MI250 package is 2 GCDs (208 CUs, 128 GB, 3.2 TB/s in total); software sees two "
        "devices of 104 CUs, 64 GB and 1.6 TB/s, and a kernel runs on one of them.",
        "A wavefront is 64 lanes; LDS is 64 KiB per CU; L2 is 8 MB per GCD; there is no "
        "Infinity Cache.",
        "No hardware fp8 and no TF32 (CDNA2): fp32 tl.dot runs as full fp32 on the matrix cores "
        "(packed FP32 doubles the vector rate).",
        "AMD-only keys apply as on MI300: waves_per_eu, matrix_instr_nonkdim (16 or 32), kpack.",
        "Grids that are a multiple of 104 programs keep every CU busy; persistent kernels use "
        "104 programs.",
        "num_stages=2 enables the stream pipeliner; LDS limits tile sizes as on MI300.",
    ),
    sources=(
        "AMD Instinct MI250 Accelerator data sheet (AMD, 2021): 208 CUs, peak FLOP/s per type, "
        "128 GB HBM2e, 3.2 TB/s per package",
        "AMD CDNA 2 Architecture white paper (AMD, 2021): two GCDs per package, 8 MB L2 per GCD, "
        "64 KB LDS per CU, packed FP32, MFMA",
        "AMD ROCm documentation, Triton kernel performance optimization (waves_per_eu, "
        "matrix_instr_nonkdim, kpack)",
    ),
    device_name_patterns=("MI250", "MI210", "gfx90a"),
)

PROFILES = (MI250, MI300X)
