"""dotted_name: the name an attribute or call expression spells."""

from __future__ import annotations

import ast

from geak_core.astutil import dotted_name


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def test_a_name_chain_is_spelt_in_full():
    assert dotted_name(_expr("torch.cuda.synchronize")) == "torch.cuda.synchronize"


def test_a_chain_from_something_else_keeps_the_attributes_after_it():
    assert dotted_name(_expr("x[0].int_repr")) == "int_repr"
    assert dotted_name(_expr("torch.zeros(n).abs")) == "abs"


def test_with_calls_a_call_the_chain_starts_at_is_written_with_parentheses():
    assert dotted_name(_expr("torch.zeros(n).abs().max"), calls=True) == "torch.zeros().abs().max"
