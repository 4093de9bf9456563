"""Which built-in example ``codesim`` retrieves for each task of the ROCm suite.

Run ``python -m geak_retriever_codesim.report`` to print the Markdown table
kept in docs/retrieval.md. Each task comes from the installed ``rocm`` suite
when it provides it (its instruction, entry points and reference file, so
the contamination guard is active); otherwise from ``FACT_SHEET_QUERIES``,
short instructions written from the suite's public interface description.
The "source" column says which. "By code" queries with the task's reference
file standing in for a lineage's latest correct code (default mode:
code, plus half the instruction's score).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from geak_core.components import RetrievalQuery
from geak_core.tasks import EntryPoint, Task

from geak_retriever_codesim.kinds import kind_of
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

# task id -> (instruction, entry-point names, kinds of operation a fitting example has)
FACT_SHEET_QUERIES: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {
    "gemm": (
        "Tiled GEMM C = A @ B with optional per-tensor or per-block scaling of 8-bit inputs and "
        "an optional leaky ReLU activation; autotuned block sizes, grouped tile ordering.",
        ("matmul_kernel",),
        frozenset({"matmul"}),
    ),
    "layernorm": (
        "Row-wise LayerNorm forward y = (x - mean) * rstd * w + b, one program per row looping "
        "over columns, also writing mean and rstd.",
        ("layernorm_kernel",),
        frozenset({"norm"}),
    ),
    "moe_gemm": (
        "Fused mixture-of-experts GEMM: each routed token row times its expert's weight, tokens "
        "sorted and padded per expert block, optional routing weight and int8/fp8 dequantisation.",
        ("moe_gemm_kernel",),
        frozenset({"matmul"}),
    ),
    "multreduce_matmul_dot_kernel": (
        "Skinny GEMM C = A @ B plus an optional per-row bias for decode shapes with M <= 8, "
        "using tl.dot; EVEN_K removes the K mask.",
        ("triton_matmul_kernel", "triton_dot_matmul_kernel"),
        frozenset({"matmul"}),
    ),
    "naive_softmax": (
        "Row softmax in three passes over the row: maximum, sum of exponentials, normalise. "
        "One program per row.",
        ("softmax_kernel_naive",),
        frozenset({"softmax"}),
    ),
    "rmsnorm_bwd": (
        "RMSNorm backward: input gradient dx and per-row partial weight gradient dg from x, g, "
        "rsigma and the output gradient, persistent over rows.",
        ("rms_bwd_kernel",),
        frozenset({"norm"}),
    ),
    "rmsnorm_fwd": (
        "RMSNorm forward y = x * rsqrt(mean(x^2) + eps) * g, optionally zero-centred gamma, "
        "persistent programs over rows, also writing rsigma.",
        ("rms_kernel",),
        frozenset({"norm"}),
    ),
    "softmax": (
        "Online row softmax: a single pass keeps the running maximum and sum of exponentials, "
        "then a normalising pass writes the output. One program per row.",
        ("softmax_kernel_online",),
        frozenset({"softmax"}),
    ),
    "test_add_kernel": (
        "Elementwise addition of two vectors, output = x + y, each program one BLOCK_SIZE chunk "
        "with a masked tail.",
        ("add_kernel",),
        frozenset({"elementwise"}),
    ),
    "test_batched_vecmat": (
        "Batched vector-matrix product C[m, n] = sum over k of A[m, k] * B[m, n, k]; each "
        "program one block_m x block_n tile of C looping over k.",
        ("batched_vecmat",),
        frozenset({"matmul"}),
    ),
    "test_block_copy": (
        "Copy through block pointers: the first half of the elements is copied and the rest is "
        "filled by the load's padding option (zero or nan).",
        ("block_copy_kernel",),
        frozenset({"index"}),
    ),
    "test_block_pointer_matmul": (
        "Single-tile GEMM using block pointers and tl.advance, with boundary checks and zero "
        "padding.",
        ("matmul_no_scf_with_advance_kernel",),
        frozenset({"matmul"}),
    ),
    "test_cast_matmul": (
        "Mixed-input GEMM: A and B of different float types are cast to the output type before "
        "tl.dot with a chosen accumulator dtype; grouped tile order.",
        ("matmul_kernel",),
        frozenset({"matmul"}),
    ),
    "test_chained_dot_fp8": (
        "Two chained dot products O = ((Q @ K^T) * scale, quantised to fp8) @ V^T * scale per "
        "batch, with fp8 scaling factors.",
        ("_chained_dot",),
        frozenset({"matmul", "attention"}),
    ),
    "test_chained_matmul": (
        "Chained matrix multiplication out = (A @ B^T) @ C with the intermediate cast to A's "
        "dtype, one row block per program looping over n.",
        ("chained_matmul_kernel",),
        frozenset({"matmul"}),
    ),
    "test_flashattention_fwd": (
        "Causal flash-attention forward with online softmax over key blocks up to the diagonal, "
        "also writing the row sum and row max.",
        ("flash_fwd_kernel",),
        frozenset({"attention"}),
    ),
    "test_gemm_fusion": (
        "Two GEMMs fused in one kernel: E = (A @ B^T cast to fp16) @ C, one row block per "
        "program looping over N.",
        ("gemm_fusion_kernel",),
        frozenset({"matmul"}),
    ),
    "test_gemm_no_scf": (
        "Loop-free single-tile GEMM through block pointers with optional fp16 output and a "
        "block-pointer store epilogue.",
        ("matmul_no_scf_kernel",),
        frozenset({"matmul"}),
    ),
    "test_iv_dependent_matmul": (
        "Tiled GEMM whose pointer advance depends on the loop induction variable, loading the "
        "next A and B tiles before or after the dot.",
        ("iv_dependent_matmul",),
        frozenset({"matmul"}),
    ),
    "test_kernel_dot": (
        "In-place matrix product Z = Z @ Z of one 16 x 16 float32 tile with tl.dot.",
        ("kernel_dot",),
        frozenset({"matmul"}),
    ),
    "test_kernel_sub": (
        "Elementwise o = a - 777 * b over N elements, N a power-of-two constexpr.",
        ("kernel_sub",),
        frozenset({"elementwise"}),
    ),
    "test_load_reduce": (
        "Row maximum y[m] = max over n of x[m, n] of one whole matrix loaded through a block "
        "pointer, reduced in one program.",
        ("load_reduce_kernel",),
        frozenset({"reduction"}),
    ),
    "test_matmul_MXFP": (
        "Pipelined GEMM optionally microscaled (MX): e2m1 fp4 A with e8m0 block scales times "
        "fp8 B via tl.dot_scaled; plus a kernel upcasting MX data to bf16.",
        ("matmul_kernel", "mxfp_to_bf16_kernel"),
        frozenset({"matmul", "quant"}),
    ),
    "test_randn": (
        "Fill a buffer with uniform random numbers using tl.rand with a runtime or compile-time "
        "seed; offsets of int32 or int64 type.",
        ("randn_kernel_runtime_seed", "randn_kernel_const_seed"),
        frozenset({"random"}),
    ),
    "test_random_int": (
        "Fill a buffer with random integers from tl.randint (Philox) with a runtime or "
        "compile-time seed.",
        ("randint_kernel_runtime_seed", "randint_kernel_const_seed"),
        frozenset({"random"}),
    ),
    "test_reverse_range": (
        "Reverse a range: out[x] = in[512 - x] for x in 0..511.",
        ("reverse_range",),
        frozenset({"index"}),
    ),
    "test_tma_store_gemm": (
        "Single-tile GEMM with block-pointer loads and a block-pointer store of the result, "
        "optionally fp16 output.",
        ("matmul_tma_load_store",),
        frozenset({"matmul"}),
    ),
    "test_triton_flip": (
        "Flip each row of an N x M tile along its last dimension.",
        ("flip_kernel",),
        frozenset({"index"}),
    ),
    "test_triton_sort": (
        "Sort each row of an N x M tile with tl.sort, ascending or descending.",
        ("sort_kernel",),
        frozenset({"sort"}),
    ),
    "test_triton_swizzle2d": (
        "For every (i, j) of a grid write the linear index i * size_j + j at the position given "
        "by tl.swizzle2d(i, j, size_i, size_j, size_g).",
        ("swizzle2d_kernel",),
        frozenset({"index"}),
    ),
    "triton_multreduce_matmul_kernel": (
        "Skinny GEMM plus bias computed by broadcast multiply and sum over K instead of tl.dot.",
        ("triton_matmul_kernel", "triton_multreduce_matmul_kernel"),
        frozenset({"matmul"}),
    ),
}


@dataclass(frozen=True)
class Pick:
    example: str
    kind: str
    score: float
    fits: bool
    excluded: tuple[str, ...]  # entries the contamination guard removed above the pick


@dataclass(frozen=True)
class Row:
    task_id: str
    source: str  # "suite" | "fact sheet"
    by_instruction: Pick
    by_code: Pick | None  # the reference file as the lineage's code; None without one

    @property
    def fits(self) -> bool:
        return self.by_instruction.fits and (self.by_code is None or self.by_code.fits)


def fact_sheet_task(task_id: str) -> Task:
    instruction, names, _ = FACT_SHEET_QUERIES[task_id]
    return Task(
        suite="rocm",
        id=task_id,
        instruction=instruction,
        entry_points=[EntryPoint(n) for n in names],
        harness="",
    )


def suite_tasks() -> dict[str, Task]:
    """Tasks of the installed ``rocm`` suite, or none when it is not installed."""
    try:
        from geak_core.plugins import get_plugin_manager

        suite = get_plugin_manager().build("suite", "rocm")
        return {t.id: t for t in suite.tasks()}
    except Exception:  # the suite is optional here; the fact-sheet queries stand in
        return {}


def pick(retriever: CodeSimRetriever, query: RetrievalQuery, kinds: frozenset[str]) -> Pick:
    excluded: list[str] = []
    for ranked in retriever.ranking(query):
        if ranked.verdict.contaminated:
            excluded.append(ranked.entry.id)
            continue
        kind = kind_of(ranked.entry.id)
        return Pick(ranked.entry.id, kind, ranked.score, kind in kinds, tuple(excluded))
    return Pick("-", "-", 0.0, False, tuple(excluded))


def build_rows(retriever: CodeSimRetriever | None = None) -> list[Row]:
    retriever = retriever or CodeSimRetriever(CodeSimOptions())
    installed = suite_tasks()
    rows = []
    for task_id, (_, _, kinds) in FACT_SHEET_QUERIES.items():
        task = installed.get(task_id)
        source = "suite" if task is not None else "fact sheet"
        task = task or fact_sheet_task(task_id)
        by_code = None
        reference = Path(task.reference) if task.reference else None
        if reference is not None and reference.is_file():
            code = reference.read_text(encoding="utf-8")
            by_code = pick(retriever, RetrievalQuery(task=task, code=code), kinds)
        rows.append(
            Row(task_id, source, pick(retriever, RetrievalQuery(task=task), kinds), by_code)
        )
    return rows


def _cells(p: Pick | None) -> str:
    if p is None:
        return "- | - | -"
    return f"{p.example} ({p.kind}) | {p.score:.1f} | {'yes' if p.fits else 'NO'}"


def markdown(rows: list[Row]) -> str:
    lines = [
        "| task | source | by instruction | score | fits | by code | score | fits "
        "| excluded by the guard |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        excluded = set(r.by_instruction.excluded) | set(r.by_code.excluded if r.by_code else ())
        lines.append(
            f"| {r.task_id} | {r.source} | {_cells(r.by_instruction)} | {_cells(r.by_code)} "
            f"| {', '.join(sorted(excluded)) or '-'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    rows = build_rows()
    print(markdown(rows))
    misfits = [r.task_id for r in rows if not r.fits]
    if misfits:
        print(f"\nno fitting example for: {', '.join(misfits)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
