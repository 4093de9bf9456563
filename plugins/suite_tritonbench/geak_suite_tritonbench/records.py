"""Candidate code from another system's output record (TritonBench ``LLM_generated``).

``predict`` is the raw model reply: code, often in fences, with prose around
it. The code is found with the core's extractor, preferring the blocks that
define the task's entry points; without the extractor the reply is used as
it is. Anything after a TritonBench separator line is the model repeating the
test part and is dropped: the judge appends the task's own test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geak_suite_tritonbench.taskfile import find_separator


def code_from_reply(reply: str, entry_points: Sequence[str] = ()) -> str | None:
    """The code to judge in ``reply``, or None when it holds none."""
    if not reply or not reply.strip():
        return None
    try:
        from geak_core.extract import extract_code
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
    return code if code.strip() else None


def reply_of(record: dict[str, Any]) -> str | None:
    """The model reply a record carries (``predict``; ``response`` / ``completion`` also accepted)."""
    for key in ("predict", "response", "completion"):
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None
