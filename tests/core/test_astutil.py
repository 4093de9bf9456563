"""dotted_name: the name an attribute or call expression spells."""

from __future__ import annotations

import ast

from geak_core.api.astutil import dotted_name


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def test_a_name_chain_is_spelt_in_full():
    assert dotted_name(_expr("torch.cuda.synchronize")) == "torch.cuda.synchronize"


def test_a_chain_from_something_else_keeps_the_attributes_after_it():
    assert dotted_name(_expr("x[0].int_repr")) == "int_repr"
    assert dotted_name(_expr("torch.zeros(n).abs")) == "abs"


def test_with_calls_a_call_the_chain_starts_at_is_written_with_parentheses():
    assert dotted_name(_expr("torch.zeros(n).abs().max"), calls=True) == "torch.zeros().abs().max"


def test_parse_source_retries_cpythons_spurious_recursion_depth_error(monkeypatch):
    """Before 3.11.8/3.12.1 a parse in one thread can make another's raise SystemError (two
    lineages extracting code at once stopped a run with it): parse_source parses one at a
    time and tries such a parse again; any other error is raised as it is."""
    import ast as real_ast

    from geak_core.api import astutil

    original = real_ast.parse
    failures = iter([SystemError("AST constructor recursion depth mismatch (before=45, after=38)")])

    def flaky(*args, **kwargs):
        error = next(failures, None)
        if error is not None:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(astutil.ast, "parse", flaky)
    assert isinstance(astutil.parse_source("x = 1"), real_ast.Module)
    monkeypatch.setattr(astutil.ast, "parse", lambda *a, **k: (_ for _ in ()).throw(SystemError("other")))
    import pytest

    with pytest.raises(SystemError, match="other"):
        astutil.parse_source("x = 1")
    monkeypatch.setattr(astutil.ast, "parse", original)
    with pytest.raises(SyntaxError):
        astutil.parse_source("def (")
