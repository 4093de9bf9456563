"""The `codesim` retriever: registration, query modes, ranking and what an Example carries."""

from __future__ import annotations

from pathlib import Path

import pytest
from geak_core.api.components import Example, RetrievalQuery, Retriever
from geak_core.api.errors import InputError
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.plugins import get_plugin_manager
from geak_retriever_codesim.kinds import kind_of
from geak_retriever_codesim.retriever import CodeSimOptions, CodeSimRetriever

MATMUL_CODE = """
@triton.jit
def my_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr):
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = tl.dot(a, b, acc)
"""


def task(instruction: str, **kw: object) -> Task:
    return Task(
        suite="fixture",
        id=str(kw.pop("id", "t")),
        instruction=instruction,
        entry_points=list(kw.pop("entry_points", [EntryPoint("kernel")])),  # type: ignore[arg-type]
        harness="",
        **kw,  # type: ignore[arg-type]
    )


SOFTMAX_TASK = task(
    "Write a Triton kernel `softmax_kernel` that computes the softmax of each row of a matrix.",
    entry_points=[EntryPoint("softmax_kernel")],
)


@pytest.fixture(scope="module")
def retriever() -> CodeSimRetriever:
    return CodeSimRetriever(CodeSimOptions())


def test_codesim_is_registered_with_its_options_schema() -> None:
    spec = get_plugin_manager().spec("retriever", "codesim")
    assert spec.options is CodeSimOptions
    built = spec.build(CodeSimOptions())
    assert isinstance(built, Retriever)


def test_default_options_follow_the_documented_defaults() -> None:
    options = CodeSimOptions()
    assert (options.top_k, options.query) == (1, "instruction_then_code")
    assert options.include_builtin is True and options.corpora == []


def test_an_instruction_query_retrieves_an_example_of_the_same_operation(
    retriever: CodeSimRetriever,
) -> None:
    [example] = retriever.retrieve(RetrievalQuery(task=SOFTMAX_TASK))
    assert kind_of(example.id) == "softmax"


def test_examples_carry_id_code_description_score_and_source(retriever: CodeSimRetriever) -> None:
    [example] = retriever.retrieve(RetrievalQuery(task=SOFTMAX_TASK))
    assert isinstance(example, Example)
    assert "@triton.jit" in example.code and not example.code.startswith('"""')
    assert "softmax" in example.description.lower()
    assert example.score > 0
    assert Path(example.source).is_file()


def test_with_code_the_default_mode_queries_by_the_lineage_code(
    retriever: CodeSimRetriever,
) -> None:
    [example] = retriever.retrieve(RetrievalQuery(task=SOFTMAX_TASK, code=MATMUL_CODE))
    assert kind_of(example.id) == "matmul"


def test_instruction_mode_ignores_the_lineage_code() -> None:
    only_instruction = CodeSimRetriever(CodeSimOptions(query="instruction"))
    [example] = only_instruction.retrieve(RetrievalQuery(task=SOFTMAX_TASK, code=MATMUL_CODE))
    assert kind_of(example.id) == "softmax"


def test_code_mode_falls_back_to_the_instruction_while_there_is_no_code() -> None:
    by_code = CodeSimRetriever(CodeSimOptions(query="code"))
    [example] = by_code.retrieve(RetrievalQuery(task=SOFTMAX_TASK, code="   "))
    assert kind_of(example.id) == "softmax"
    [with_code] = by_code.retrieve(RetrievalQuery(task=SOFTMAX_TASK, code=MATMUL_CODE))
    assert kind_of(with_code.id) == "matmul"


def test_query_kinds_follow_the_mode_and_whether_there_is_code() -> None:
    kinds = {
        mode: [
            CodeSimRetriever(CodeSimOptions(query=mode)).query_kind(
                RetrievalQuery(task=SOFTMAX_TASK, code=code)
            )
            for code in (None, MATMUL_CODE)
        ]
        for mode in ("instruction_then_code", "instruction", "code")
    }
    assert kinds == {
        "instruction_then_code": ["instruction", "code+instruction"],
        "instruction": ["instruction", "instruction"],
        "code": ["instruction", "code"],
    }


def test_the_default_code_query_adds_half_the_instruction_score() -> None:
    query = RetrievalQuery(task=SOFTMAX_TASK, code=MATMUL_CODE)
    by_code = CodeSimRetriever(CodeSimOptions(query="code")).scores(query)
    by_instruction = CodeSimRetriever(CodeSimOptions(query="instruction")).scores(query)
    blended = CodeSimRetriever(CodeSimOptions()).scores(query)
    assert blended == pytest.approx(
        [c + 0.5 * i for c, i in zip(by_code, by_instruction, strict=True)]
    )


def test_pure_code_queries_ignore_the_instruction() -> None:
    other = task("Sort each row with tl.sort.", entry_points=[EntryPoint("sort_kernel")])
    by_code = CodeSimRetriever(CodeSimOptions(query="code"))
    assert by_code.scores(RetrievalQuery(task=SOFTMAX_TASK, code=MATMUL_CODE)) == by_code.scores(
        RetrievalQuery(task=other, code=MATMUL_CODE)
    )


def test_entry_point_names_take_part_in_the_instruction_query(retriever: CodeSimRetriever) -> None:
    vague = task(
        "Write the kernel described by its name.", entry_points=[EntryPoint("gelu_kernel")]
    )
    [example] = retriever.retrieve(RetrievalQuery(task=vague))
    assert example.id == "builtin:gelu"


def test_top_k_examples_come_best_first() -> None:
    three = CodeSimRetriever(CodeSimOptions(top_k=3))
    examples = three.retrieve(RetrievalQuery(task=SOFTMAX_TASK))
    assert len(examples) == 3
    assert [e.score for e in examples] == sorted((e.score for e in examples), reverse=True)
    assert len({e.id for e in examples}) == 3


def test_the_query_can_ask_for_more_examples_than_top_k(retriever: CodeSimRetriever) -> None:
    assert len(retriever.retrieve(RetrievalQuery(task=SOFTMAX_TASK, k=4))) == 4


def test_a_query_matching_nothing_retrieves_nothing(retriever: CodeSimRetriever) -> None:
    nonsense = task("zzzq qqxv", entry_points=[EntryPoint("qqxv_zzzq")])
    assert retriever.retrieve(RetrievalQuery(task=nonsense)) == []


def test_without_builtin_and_without_corpora_nothing_is_retrieved() -> None:
    empty = CodeSimRetriever(CodeSimOptions(include_builtin=False))
    assert empty.entries == []
    assert empty.retrieve(RetrievalQuery(task=SOFTMAX_TASK)) == []


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"top_k": 0}, "top_k"),
        ({"query": "title"}, "query"),
        ({"contamination_threshold": 0.0}, "contamination_threshold"),
        ({"code_fields": []}, "code_fields"),
    ],
)
def test_invalid_options_are_rejected_naming_the_key(values: dict[str, object], key: str) -> None:
    with pytest.raises(InputError, match=rf"retriever\.{key}"):
        CodeSimOptions(**values)  # type: ignore[arg-type]
