"""The ROCm retrieval table: every task gets an example of its own kind of operation,
queried by its instruction and by code (its reference standing in for a lineage's code)."""

from __future__ import annotations

import pytest
from geak_core.components import RetrievalQuery
from geak_retriever_codesim.corpus import BUILTIN_DIR
from geak_retriever_codesim.kinds import ENTRY_KINDS, kind_of
from geak_retriever_codesim.report import (
    FACT_SHEET_QUERIES,
    build_rows,
    fact_sheet_task,
    markdown,
    suite_tasks,
)
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

ROCM_TASK_IDS = """
gemm layernorm moe_gemm multreduce_matmul_dot_kernel naive_softmax rmsnorm_bwd rmsnorm_fwd softmax
test_add_kernel test_batched_vecmat test_block_copy test_block_pointer_matmul test_cast_matmul
test_chained_dot_fp8 test_chained_matmul test_flashattention_fwd test_gemm_fusion test_gemm_no_scf
test_iv_dependent_matmul test_kernel_dot test_kernel_sub test_load_reduce test_matmul_MXFP
test_randn test_random_int test_reverse_range test_tma_store_gemm test_triton_flip test_triton_sort
test_triton_swizzle2d triton_multreduce_matmul_kernel
""".split()


@pytest.fixture(scope="module")
def retriever() -> CodeSimRetriever:
    return CodeSimRetriever(CodeSimOptions())


def test_the_report_covers_the_31_rocm_tasks() -> None:
    assert sorted(FACT_SHEET_QUERIES) == sorted(ROCM_TASK_IDS)
    assert len(ROCM_TASK_IDS) == 31


def test_every_builtin_entry_has_a_kind() -> None:
    stems = sorted(p.stem for p in BUILTIN_DIR.glob("*.py") if not p.name.startswith("_"))
    assert sorted(ENTRY_KINDS) == stems


@pytest.mark.parametrize("task_id", ROCM_TASK_IDS)
def test_fact_sheet_query_retrieves_the_same_kind_of_operation(
    retriever: CodeSimRetriever, task_id: str
) -> None:
    [example] = retriever.retrieve(RetrievalQuery(task=fact_sheet_task(task_id)))
    assert kind_of(example.id) in FACT_SHEET_QUERIES[task_id][2]


def test_installed_suite_tasks_retrieve_the_same_kind_of_operation(
    retriever: CodeSimRetriever,
) -> None:
    if not suite_tasks():
        pytest.skip("the rocm suite is not installed")
    rows = [r for r in build_rows(retriever) if r.source == "suite"]
    assert rows
    assert [r.task_id for r in rows if not r.by_instruction.fits] == []
    by_code = [r for r in rows if r.by_code is not None]
    assert by_code  # the suite ships reference files
    assert [r.task_id for r in by_code if not r.by_code.fits] == []  # type: ignore[union-attr]


def test_the_markdown_table_has_one_row_per_task(retriever: CodeSimRetriever) -> None:
    table = markdown(build_rows(retriever)).splitlines()
    assert table[0].startswith("| task | source | by instruction |")
    assert len(table) == 2 + 31
