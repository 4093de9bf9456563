"""Reference for rocm/gemm: C = act(scale(A @ B)) for 16/32-bit, fp8 and int8 operands.

Program ids are first dealt out as on an MI300, whose 8 dies (XCDs) each run
every 8th program: each die gets a contiguous share of the tile ids. Then
tiles are visited in GROUP_SIZE_M-row groups for cache reuse. Both orders are
the original's, kept on every GPU so that the tile order (and with it the
cache reuse) and so the speed compare with the published ones. B is cast to
A's dtype in the kernel (fp16/bf16 x fp8); int8 x int8 accumulates exactly in
int32, everything else in float32 (fp32 operands with IEEE products).
Per-tensor scales multiply the finished accumulator; per-block scales weight
each K step's partial product.

On a GPU the launch follows the original's too: it autotunes over the
original's seven configs (num_stages 2; AMD-only keys, which the harness drops
elsewhere, included), with EVEN_K and GRID_MN derived from the chosen blocks,
so that this baseline runs with the tiles the original picks on the same GPU
(with the harness's fixed 128 x 128 x 64 tiles and three stages it took 28 %
less time than the original on an H100). Two departures, neither of which
changes a pick at a timed case: only row-major 16- and 32-bit operands
without scales or activation are tuned (the timed cases; the others run the
original's first config, without trying the others), and on NVIDIA the 256 x 256
tiles are left out (their float32 accumulator alone needs 256 registers a
thread: on an H100 they took three times as long as the original's pick, and
compile slowly). The autotuning key adds the A and B strides to the
original's (M, N, K), so that a column-major correctness case does not choose
the tiles of the row-major timed case of the same size (the original's perf
tests run in a process of their own). Under the CPU interpreter the kernel is
not tuned: the harness's tiles are used.
"""

import os

import triton
import triton.language as tl


@triton.jit
def leaky_relu(x):
    x = x + 1
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
    stride_cn, a_scale_ptr, b_scale_ptr, stride_ascale_m, stride_ascale_k, stride_bscale_k,
    stride_bscale_n, GROUP_K: tl.constexpr, GROUP_N: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, EVEN_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, APPLY_SCALE: tl.constexpr, ACTIVATION: tl.constexpr,
    GRID_MN: tl.constexpr,
):
    NUM_DIES: tl.constexpr = 8
    share: tl.constexpr = (GRID_MN + NUM_DIES - 1) // NUM_DIES  # tiles of a fully loaded die
    loaded: tl.constexpr = (GRID_MN - 1) % NUM_DIES + 1  # dies with `share` tiles; others one less
    launched = tl.program_id(0)
    die = launched % NUM_DIES
    slot = launched // NUM_DIES
    if die < loaded:
        pid = die * share + slot
    else:
        pid = loaded * share + (die - loaded) * (share - 1) + slot

    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pids_per_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // pids_per_group) * GROUP_SIZE_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows

    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    rows = offs_m % M
    cols = offs_n % N
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn

    a_ty = a_ptr.dtype.element_ty
    INT_DOT: tl.constexpr = a_ty == tl.int8 and b_ptr.dtype.element_ty == tl.int8
    PRECISION: tl.constexpr = "ieee" if a_ty == tl.float32 else None
    ACC_TY: tl.constexpr = tl.int32 if INT_DOT else tl.float32
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ACC_TY)
    if APPLY_SCALE == "block":
        a_scale_rows = a_scale_ptr + rows * stride_ascale_m
        b_scale_cols = b_scale_ptr + (cols // GROUP_N) * stride_bscale_n

    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_SIZE_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        b = b.to(a_ty)
        if APPLY_SCALE == "block":
            group = (k * BLOCK_SIZE_K) // GROUP_K
            a_s = tl.load(a_scale_rows + group * stride_ascale_k)
            b_s = tl.load(b_scale_cols + group * stride_bscale_k)
            partial = tl.dot(a, b, input_precision=PRECISION, out_dtype=ACC_TY)
            acc += partial * a_s[:, None] * b_s[None, :]
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC_TY)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if APPLY_SCALE == "tensor":
        scale = tl.load(b_scale_ptr)
        if a_scale_ptr is not None:
            scale *= tl.load(a_scale_ptr)
        acc = acc.to(tl.float32) * scale
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _hip() -> bool:
    try:
        import torch

        return torch.version.hip is not None
    except ImportError:
        return False


# The original's configs: (meta-parameters, num_warps); num_stages is 2 in every one.
ORIGINAL_CONFIGS = [
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "waves_per_eu": 2,
      "kpack": 2, "matrix_instr_nonkdim": 16}, 4),
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 4, "waves_per_eu": 2,
      "kpack": 2, "matrix_instr_nonkdim": 16}, 8),
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "waves_per_eu": 0}, 8),
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 4, "waves_per_eu": 2,
      "kpack": 1, "matrix_instr_nonkdim": 16}, 8),
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "waves_per_eu": 0,
      "kpack": 1}, 8),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4, "waves_per_eu": 0}, 8),
    ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1, "waves_per_eu": 2}, 8),
]


def tuned_configs(configs: list, named_args: dict, **kwargs) -> list:
    """The configs tried for one launch (``prune_configs_by``): all of them (but the 256 x 256
    tiles on NVIDIA) for row-major 16/32-bit operands without scales or activation, else the
    first."""
    args = {**named_args, **kwargs}
    a, b = args["a_ptr"], args["b_ptr"]
    tuned = (a.element_size() > 1 and b.element_size() > 1 and args.get("APPLY_SCALE") is None
             and not args.get("ACTIVATION") and args["stride_ak"] == 1 and args["stride_bn"] == 1)
    if not tuned:
        return configs[:1]
    if _hip():
        return configs
    return [c for c in configs if c.kwargs["BLOCK_SIZE_M"] * c.kwargs["BLOCK_SIZE_N"] < 256 * 256]


if os.environ.get("TRITON_INTERPRET") != "1":
    matmul_kernel = triton.autotune(
        configs=[triton.Config(dict(meta), num_warps=warps, num_stages=2) for meta, warps in ORIGINAL_CONFIGS],
        key=["M", "N", "K", "stride_ak", "stride_bn"],
        prune_configs_by={"early_config_prune": tuned_configs},
        use_cuda_graph=True,
    )(triton.heuristics({
        "EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0,
        "GRID_MN": lambda args: triton.cdiv(args["M"], args["BLOCK_SIZE_M"]) * triton.cdiv(args["N"], args["BLOCK_SIZE_N"]),
    })(matmul_kernel))
