"""Candidate code from another system's output record (TritonBench ``LLM_generated``).

``predict`` is the raw model reply: code, often in fences, with prose around
it. The code is found with the core's extractor, preferring the blocks that
define the task's entry points; without the extractor the reply is used as
it is. Anything after a TritonBench separator line is the model repeating the
test part and is dropped: the judge appends the task's own test.

With ``drop_test_calls`` (the published protocol), module-level statements
that call a ``test_*`` function (``test_add()``, ``result = test_add()``) are
removed too, as GEAK-eval removes them before running a reply: the model's
own test would otherwise run when the candidate is imported. Their lines are
blanked, not re-printed, so the rest of the code keeps its text and its line
numbers.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from geak_core.api.astutil import parse_source

from geak_suite_tritonbench.taskfile import find_separator


def _calls_a_test(node: ast.stmt) -> bool:
    value = getattr(node, "value", None)
    if not isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return False
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.startswith("test_")


def drop_module_level_test_calls(code: str) -> str:
    """``code`` without its module-level statements calling a ``test_*`` function."""
    try:
        tree = parse_source(code)
    except SyntaxError:
        return code
    spans = [(node.lineno, node.end_lineno or node.lineno, _calls_a_test(node)) for node in tree.body]
    kept = {n for first, last, test in spans if not test for n in range(first, last + 1)}
    doomed = {n for first, last, test in spans if test for n in range(first, last + 1)} - kept
    if not doomed:
        return code
    lines = code.splitlines(keepends=True)
    return "".join("\n" if number in doomed else line
                   for number, line in enumerate(lines, start=1))


def code_from_reply(
    reply: str, entry_points: Sequence[str] = (), drop_test_calls: bool = False
) -> str | None:
    """The code to judge in ``reply``, or None when it holds none."""
    if not reply or not reply.strip():
        return None
    try:
        from geak_core.api.extract import extract_code
    except ImportError:  # an older core without the extractor
        code: str | None = reply
    else:
        found = extract_code(reply, list(entry_points))
        code = found.code if found is not None else None
    if code is None:
        return None
    line = find_separator(code)
    if line is not None:
        code = "".join(code.splitlines(keepends=True)[: line - 1])
    if drop_test_calls:
        code = drop_module_level_test_calls(code)
    return code if code.strip() else None


def reply_of(record: dict[str, Any]) -> str | None:
    """The model reply a record carries (``predict``; ``response`` / ``completion`` also accepted)."""
    for key in ("predict", "response", "completion"):
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None
