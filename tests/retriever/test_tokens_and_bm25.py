"""The code-aware tokenizer and the BM25 ranker."""

from __future__ import annotations

import pytest
from geak_retriever_codesim.bm25 import BM25
from geak_retriever_codesim.tokens import shingles, split_identifier, tokenize


def test_identifiers_split_on_snake_and_camel_case() -> None:
    assert split_identifier("BLOCK_SIZE") == ["block", "size"]
    assert split_identifier("loadTileFast") == ["load", "tile", "fast"]
    assert split_identifier("HTMLParser2") == ["html", "parser", "2"]


def test_compound_identifiers_also_count_whole() -> None:
    assert tokenize("layer_norm") == ["layer", "norm", "layernorm"]
    assert "layernorm" in tokenize("LayerNorm")


def test_tl_calls_and_triton_decorators_stay_whole_tokens() -> None:
    code = "@triton.autotune(configs=[])\n@triton.jit\ndef k(a):\n    c = tl.dot(a, tl.load(a))"
    tokens = tokenize(code)
    assert {"@triton.autotune", "@triton.jit", "tl.dot", "tl.load"} <= set(tokens)


def test_nested_tl_namespaces_stay_whole() -> None:
    assert "tl.math.exp2" in tokenize("y = tl.math.exp2(x)")


def test_keywords_punctuation_numbers_and_one_letter_names_are_dropped() -> None:
    assert tokenize("for i in range(0, 16): x = y + 1.5 if z else None") == ["range"]


def test_plurals_fold_to_the_singular() -> None:
    assert tokenize("rows columns patches") == ["row", "column", "patch"]


def test_abbreviations_map_to_the_spelled_out_word() -> None:
    assert tokenize("kernel_sub gemm") == ["kernel", "subtract", "kernelsub", "matmul"]


def test_launch_contract_words_do_not_count() -> None:
    assert tokenize("The harness launches it with num_warps=4 on a grid") == []


def test_shingles_of_a_short_sequence_is_the_sequence_itself() -> None:
    assert shingles(["a", "b"], 4) == {("a", "b")}
    assert shingles(["a", "b", "c"], 2) == {("a", "b"), ("b", "c")}
    assert shingles([], 4) == set()


def test_bm25_prefers_the_document_containing_the_rare_term() -> None:
    docs = [["softmax", "row", "max"], ["matmul", "row", "tile"], ["row", "sum"]]
    scores = BM25(docs).scores(["softmax", "row"])
    assert scores[0] > scores[1] and scores[0] > scores[2]


def test_bm25_rare_terms_weigh_more_than_common_ones() -> None:
    bm25 = BM25([["row", "softmax"], ["row", "sum"], ["row", "max"]])
    assert bm25.idf("softmax") > bm25.idf("row") > 0


def test_bm25_shorter_document_wins_at_equal_term_count() -> None:
    scores = BM25([["dot"] + ["pad"] * 20, ["dot", "pad"], ["other"]]).scores(["dot"])
    assert scores[1] > scores[0] > 0 == scores[2]


def test_bm25_repeated_query_terms_weigh_more_but_saturate() -> None:
    bm25 = BM25([["flip", "row"], ["row", "sum"], ["tile"]])
    once, twice, many = (bm25.scores(["flip"] * n)[0] for n in (1, 2, 50))
    assert once < twice < many < 2 * once


def test_bm25_unknown_or_empty_queries_score_zero() -> None:
    bm25 = BM25([["a1"], ["b1"]])
    assert bm25.scores([]) == [0.0, 0.0]
    assert bm25.scores(["nowhere"]) == [0.0, 0.0]


def test_bm25_on_an_empty_collection_returns_no_scores() -> None:
    assert BM25([]).scores(["x"]) == []


@pytest.mark.parametrize("term", ["tl.dot", "@triton.jit"])
def test_whole_tokens_are_searchable(term: str) -> None:
    docs = [tokenize("@triton.jit\ndef k(a):\n    tl.dot(a, a)"), tokenize("def f(x): return x")]
    assert BM25(docs).scores([term])[0] > 0


def test_lexemes_keep_names_whole_and_leave_comments_out() -> None:
    from geak_retriever_codesim.tokens import code_shingles, lexemes

    code = "x_ptr = tl.load(a + 1.5e-3)  # a comment\n"
    assert lexemes(code) == ["x_ptr", "=", "tl", ".", "load", "(", "a", "+", "1.5e-3", ")"]
    assert code_shingles(code) == code_shingles("x_ptr = tl.load(a + 1.5e-3)\n# other words\n")
