"""What a variant changed, as a unified diff (for a prompt, a log or a person)."""

from __future__ import annotations

import difflib


def variant_diff(original: str, variant: str, *, name: str = "candidate.py", context: int = 1) -> str:
    """The unified diff from ``original`` to ``variant`` (empty when they are the same),
    with ``context`` lines around each change."""
    lines = difflib.unified_diff(original.splitlines(keepends=True), variant.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}", n=context)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
