"""Reading Python source with ``ast``: helpers the suites' static checks share."""

from __future__ import annotations

import ast


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
