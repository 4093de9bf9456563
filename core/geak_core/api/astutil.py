"""Reading Python source with ``ast``: helpers the suites' static checks share, and the one
``parse`` every in-process parse goes through."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_PARSE_LOCK = threading.Lock()


def one_parse_at_a_time(work: Callable[[], T]) -> T:
    """``work()``, which parses Python source (``ast.parse``, or a library that calls it, as
    radon does), one thread at a time, and tried again on CPython's spurious "AST
    constructor recursion depth mismatch" (before 3.11.8 and 3.12.1 the AST converter keeps
    its depth in interpreter-wide state, which another thread's parse resets midway: the
    agent's lineages extract code, the judge checks sources and task summaries measure code
    in several threads at once; such errors stopped a run and a test's run)."""
    for attempt in range(3):
        try:
            with _PARSE_LOCK:
                return work()
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def parse_source(code: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` through :func:`one_parse_at_a_time`."""
    return one_parse_at_a_time(lambda: ast.parse(code, filename=filename))


def dotted_name(node: ast.AST, *, calls: bool = False) -> str:
    """The dotted name an expression spells: ``torch.cuda.synchronize``, ``tl.max``.

    A chain that starts at something other than a name keeps only the attributes
    after it (``x[0].int_repr`` gives ``int_repr``). With ``calls``, a call the chain
    starts at is written with ``()`` (``torch.zeros(n).abs`` gives ``torch.zeros().abs``)
    instead of being dropped.
    """
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif calls and isinstance(node, ast.Call):
        parts.append(dotted_name(node.func, calls=True) + "()")
    return ".".join(reversed(parts))
