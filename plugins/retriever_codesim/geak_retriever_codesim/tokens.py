"""A code-aware tokenizer shared by the ranker and the contamination guard.

Triton code and English instructions go through the same function so that a
query in either language meets the corpus on common ground: identifiers are
split into their words (``BLOCK_SIZE`` -> ``block``, ``size``; ``loadTile``
-> ``load``, ``tile``) and kept whole as well, while the calls and decorators
that say what a kernel does (``tl.dot``, ``tl.atomic_add``, ``@triton.jit``,
``@triton.autotune``) stay single tokens. Keywords, punctuation, numbers,
one-letter names and English filler are dropped: they match everything.
"""

from __future__ import annotations

import keyword
import re

_TOKEN = re.compile(
    r"@\s*triton\s*\.\s*(?P<deco>[A-Za-z_]\w*)"  # decorators, whole
    r"|\b(?P<ns>tl|triton|libdevice)\s*\.\s*(?P<attr>[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_ENGLISH = """
    self none true false the an and or of to in on for by with at be is are it its this that then
    than from as into each every one two which when where what must should can may also only same
    after before so such there these those we you use uses used using write given here how do does
    has have via per but not no all any other else int float str bool import def return torch
    triton tl language annotations future over like eg etc ie both either more most less very just
    already always never still thus hence
"""
# How a task is launched and judged says nothing about what it computes.
_HARNESS = """
    num warp numwarps numstages harness launch launched keyword passed pass exact exactly need
    needed help helps note contract tolerance listed compared check checked allowed dtype type
    contiguous result bfloat inside within whole major program grid argument fixed
"""
# Abbreviations in identifiers and prose, mapped to the word the corpus spells out.
CANONICAL: dict[str, str] = {
    "sub": "subtract",
    "minus": "subtract",
    "mul": "multiply",
    "div": "divide",
    "gemm": "matmul",
    "mm": "matmul",
    "bmm": "matmul",
    "attn": "attention",
    "idx": "index",
    "indice": "index",
    "cum": "cumulative",
    "avg": "average",
    "rand": "random",
}

STOPWORDS: frozenset[str] = frozenset(
    set(keyword.kwlist) | set(keyword.softkwlist) | set(_ENGLISH.split()) | set(_HARNESS.split())
)


def _stem(word: str) -> str:
    """Plural folding only: enough for "rows"/"row", cheap and predictable."""
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _normal(word: str) -> str:
    stem = _stem(word)
    return CANONICAL.get(stem, stem)


def split_identifier(name: str) -> list[str]:
    """Words of a snake_case / camelCase / UPPER_CASE identifier, lower-cased."""
    words: list[str] = []
    for part in name.split("_"):
        if part:
            words.extend(w.lower() for w in _CAMEL.findall(part))
    return words


def tokenize(text: str) -> list[str]:
    """Tokens of code or prose, in order (order matters to shingle similarity)."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        if match.group("deco"):
            out.append("@triton." + match.group("deco"))
        elif match.group("ns"):
            attr = re.sub(r"\s+", "", match.group("attr"))
            out.append(f"{match.group('ns')}.{attr}")
        else:
            ident = match.group("ident")
            words = [_normal(w) for w in split_identifier(ident) if w not in STOPWORDS]
            words = [w for w in words if len(w) > 1 and not w.isdigit() and w not in STOPWORDS]
            out.extend(words)
            whole = ident.lower().replace("_", "")
            if len(words) > 1 and whole not in STOPWORDS:
                out.append(whole)
    return out


def shingles(tokens: list[str], size: int = 4) -> set[tuple[str, ...]]:
    """Overlapping ``size``-grams; a sequence shorter than ``size`` is one shingle."""
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


_STRING_OR_COMMENT = re.compile(
    r"""
    ( \"\"\"[\s\S]*?\"\"\"          # a string literal, kept whole (a '#' in it is no comment)
    | '''[\s\S]*?'''
    | "(?:\\.|[^"\\\n])*"
    | '(?:\\.|[^'\\\n])*'
    )
    | \#[^\n]*                       # a comment
    | \\\n                          # a line continuation (no token either)
    """,
    re.VERBOSE,
)


def strip_comments(code: str) -> str:
    """``code`` without ``#`` comments (and line continuations): comments are the cheapest
    thing to change in a copy.

    One regular-expression pass (string literals are matched first and kept), about
    twenty times faster than Python's tokenizer on crawled files and tolerant of code
    that does not tokenize."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", code)


_LEXEME = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[^\w\s]")


def lexemes(code: str) -> list[str]:
    """Python-level tokens of ``code`` (names, numbers, operators), comments left out.

    Unlike ``tokenize``, nothing is split, dropped or normalised: near-duplicate
    detection wants the literal token stream, where independent code differs.
    """
    return _LEXEME.findall(strip_comments(code))


def code_shingles(code: str, size: int = 8) -> set[tuple[str, ...]]:
    """Shingles of ``code``'s lexemes: what the near-duplicate check compares."""
    return shingles(lexemes(code), size)


def token_shingles(code: str, size: int = 5) -> set[tuple[str, ...]]:
    """Shingles of ``code``'s retrieval tokens (``tokenize``, comments left out): what the
    corpus audit and the retriever's similarity threshold compare. Unlike ``code_shingles``
    they ignore what the ranker ignores (numbers, punctuation, keywords, spelling of names),
    so an edit of those alone leaves them whole."""
    return shingles(tokenize(strip_comments(code)), size)


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    """Shared shingles over all shingles of either side; 0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0
