"""Reference for rocm/multreduce_matmul_dot_kernel: C = A @ B (+ bias per row) with tl.dot.

The launched kernel is a thin wrapper over a core that also offers a
multiply-and-reduce path (USE_DOT=False), as in the original's layout. Rows
and columns past the edge wrap (modulo) on load so no load reads outside A or
B; only the store is masked.

On a GPU the wrapper autotunes over the original's 24 configs (BLOCK_SIZE_M
16, BLOCK_SIZE_N 16/32, BLOCK_SIZE_K 128/256/512, one or two warps, two
stages; the AMD-only keys, which the harness drops elsewhere, included), with
EVEN_K derived from the chosen block, as the original does: with the harness's
64 x 64 x 64 blocks and four warps it ran up to 31 times faster than the
original at the timed shapes (M up to 4096, for which the original's
decode-sized tiles were not made), and the suite's speedups are meant to
compare with the paper's, measured against the original. The autotuning key
adds B's strides to the original's (M, N, K). Only row-major B (the timed
cases) is tuned; column-major B (correctness only) runs the original's first
config without trying the others: tuning each correctness shape compiled and
timed every config there, 20-29 s a shape on an H100, and the judge's
reference run did not finish in 535 s. On NVIDIA, configs that differ only in
the AMD-only keys (dropped there) are tried once. Under the CPU interpreter the
wrapper is not tuned: the harness's blocks are used.

The sizes and strides are annotated ``int``, as in the original's signature:
Triton then compiles them as 32-bit values without specialising a stride of 1
to a constant. Unannotated (with the original's configs) the kernel took other
layouts and ran 7-17 times faster than the original on an H100; annotated,
both compile to the same layouts (checked by compiling both for sm_90 with
the runtime's specialisation of the timed cases' arguments).
"""

import os

import triton
import triton.language as tl


@triton.jit
def triton_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M: int, N: int, K: int, stride_am: int, stride_ak: int,
    stride_bk: int, stride_bn: int, stride_cm: int, stride_cn: int, stride_bias: int,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, USE_BIAS: tl.constexpr, USE_DOT: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_m % M)[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + (offs_n % N)[None, :] * stride_bn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_SIZE_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if USE_DOT:
            acc = tl.dot(a, b, acc)
        else:
            prod = a[:, :, None].to(tl.float32) * b[None, :, :].to(tl.float32)
            acc += tl.sum(prod, axis=1)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if USE_BIAS:
        bias = tl.load(bias_ptr + (offs_m % M) * stride_bias).to(tl.float32)
        acc += bias[:, None]
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def triton_dot_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M: int, N: int, K: int, stride_am: int, stride_ak: int,
    stride_bk: int, stride_bn: int, stride_cm: int, stride_cn: int, stride_bias: int,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, USE_BIAS: tl.constexpr, EVEN_K: tl.constexpr,
):
    triton_matmul_kernel(
        a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
        stride_cm, stride_cn, stride_bias, BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N,
        BLOCK_SIZE_K=BLOCK_SIZE_K, USE_BIAS=USE_BIAS, USE_DOT=True, EVEN_K=EVEN_K,
    )


# The original's configs (its AMD-only keys included; launch() drops them elsewhere).
ORIGINAL_CONFIGS = [
    triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": block_n, "BLOCK_SIZE_K": block_k, "waves_per_eu": 0,
                   "matrix_instr_nonkdim": 16, "kpack": kpack}, num_warps=warps, num_stages=2)
    for block_n in (16, 32) for block_k in (128, 256, 512) for kpack in (1, 2) for warps in (1, 2)
]

AMD_ONLY_KEYS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")


def _hip() -> bool:
    try:
        import torch

        return torch.version.hip is not None
    except ImportError:
        return False


def tuned_configs(configs: list, named_args: dict, **kwargs) -> list:
    """The configs tried for one launch (``prune_configs_by``): for row-major B all of them
    (on NVIDIA, one of each set that differs only in AMD-only keys), else the first."""
    args = {**named_args, **kwargs}
    if args["stride_bn"] != 1:
        return configs[:1]
    if _hip():
        return configs
    seen, unique = set(), []
    for config in configs:
        key = (tuple(sorted((k, v) for k, v in config.kwargs.items() if k not in AMD_ONLY_KEYS)),
               config.num_warps, config.num_stages)
        if key not in seen:
            seen.add(key)
            unique.append(config)
    return unique


if os.environ.get("TRITON_INTERPRET") != "1":
    triton_dot_matmul_kernel = triton.autotune(
        configs=ORIGINAL_CONFIGS, key=["M", "N", "K", "stride_bk", "stride_bn"],
        prune_configs_by={"early_config_prune": tuned_configs},
    )(triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_SIZE_K"] == 0})(
        triton_dot_matmul_kernel))
