"""What kind of operation each built-in corpus entry is, for reports and checks.

Kinds are coarse on purpose ("matmul" covers tiled, grouped, split-K and
fused GEMMs): a one-shot example is good when it shows the same kind of
computation, not when it solves the exact task.
"""

from __future__ import annotations

ENTRY_KINDS: dict[str, str] = {
    "vector_add": "elementwise",
    "scaled_subtract": "elementwise",
    "gelu": "elementwise",
    "silu_gate": "elementwise",
    "relu_variants": "elementwise",
    "row_bias_add": "elementwise",
    "cast_copy": "elementwise",
    "row_sum": "reduction",
    "tile_max_block_ptr": "reduction",
    "argmax_rows": "reduction",
    "global_sum_atomic": "reduction",
    "welford_mean_var": "reduction",
    "layer_norm_forward": "norm",
    "rms_norm_forward": "norm",
    "rms_norm_backward": "norm",
    "group_norm": "norm",
    "softmax_rows": "softmax",
    "softmax_online": "softmax",
    "softmax_three_pass": "softmax",
    "log_softmax": "softmax",
    "matmul_tiled": "matmul",
    "matmul_grouped": "matmul",
    "matmul_split_k": "matmul",
    "matmul_batched": "matmul",
    "matmul_block_ptr": "matmul",
    "matmul_single_tile": "matmul",
    "skinny_matmul_reduce": "matmul",
    "rowwise_vecmat": "matmul",
    "matmul_mixed_dtype": "matmul",
    "chained_matmul": "matmul",
    "moe_expert_matmul": "matmul",
    "matmul_block_scaled": "matmul",
    "scaled_two_dot": "matmul",
    "flash_attention_causal": "attention",
    "cumsum_rows": "scan",
    "running_max_scan": "scan",
    "sort_rows": "sort",
    "topk_rows": "sort",
    "reverse_rows": "index",
    "embedding_gather": "index",
    "scatter_add_rows": "index",
    "block_ptr_copy_pad": "index",
    "transpose_tiled": "index",
    "tile_swizzle_map": "index",
    "random_uniform_fill": "random",
    "random_int_fill": "random",
    "dropout": "random",
    "quantize_int8_rowwise": "quant",
    "dequantize_int8_rowwise": "quant",
    "fp8_scaled_cast": "quant",
    "mx_fp4_decode": "quant",
    "conv1d_direct": "conv",
    "conv2d_direct": "conv",
    "max_pool2d": "pool",
    "cross_entropy_rows": "loss",
}


def kind_of(entry_id: str) -> str:
    """Kind of a built-in entry id ("builtin:<name>"); "?" for anything else."""
    corpus, _, name = entry_id.partition(":")
    return ENTRY_KINDS.get(name, "?") if corpus == "builtin" else "?"
