"""What kind of operation each built-in corpus entry is, for reading rankings and tests.

Kinds are coarse on purpose ("matmul" covers tiled, grouped, split-K and
fused GEMMs): a one-shot example is good when it shows the same kind of
computation, not when it solves the exact task.
"""

from __future__ import annotations

ENTRY_KINDS: dict[str, str] = {
    "vector_add": "elementwise",
    "lerp": "elementwise",
    "gelu": "elementwise",
    "silu_gate": "elementwise",
    "relu_variants": "elementwise",
    "row_bias_add": "elementwise",
    "cast_copy": "elementwise",
    "row_sum": "reduction",
    "column_minmax": "reduction",
    "argmax_rows": "reduction",
    "global_sum_atomic": "reduction",
    "welford_mean_var": "reduction",
    "layer_norm_forward": "norm",
    "rms_norm_residual": "norm",
    "rms_norm_backward": "norm",
    "group_norm": "norm",
    "softmax_rows": "softmax",
    "softmax_online": "softmax",
    "log_softmax": "softmax",
    "matmul_tiled": "matmul",
    "matmul_grouped": "matmul",
    "matmul_split_k": "matmul",
    "matmul_batched": "matmul",
    "matmul_block_ptr": "matmul",
    "gemv": "matmul",
    "moe_expert_matmul": "matmul",
    "matmul_block_scaled": "matmul",
    "flash_attention_causal": "attention",
    "cumsum_rows": "scan",
    "running_max_scan": "scan",
    "topk_rows": "sort",
    "roll_rows": "index",
    "embedding_gather": "index",
    "scatter_add_rows": "index",
    "transpose_tiled": "index",
    "gaussian_noise": "random",
    "dropout": "random",
    "quantize_int8_rowwise": "quant",
    "dequantize_int8_rowwise": "quant",
    "fp8_scaled_cast": "quant",
    "conv1d_direct": "conv",
    "conv2d_direct": "conv",
    "max_pool2d": "pool",
    "cross_entropy_rows": "loss",
}


def kind_of(entry_id: str) -> str:
    """Kind of a built-in entry id ("builtin:<name>"); "?" for anything else."""
    corpus, _, name = entry_id.partition(":")
    return ENTRY_KINDS.get(name, "?") if corpus == "builtin" else "?"
