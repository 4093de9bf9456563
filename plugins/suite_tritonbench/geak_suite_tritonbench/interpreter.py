"""What keeps a task from running under the CPU interpreter, found by reading its code.

The harness rewrites ``'cuda'`` in the *test part* only. Under the Triton
interpreter a task still fails, for the reference and every candidate alike,
when its reference code places tensors on ``'cuda'``, when either part calls
``torch.cuda`` functions that need a GPU, when kernels call ``libdevice``
(the interpreter implements none of it) or when it uses bfloat16. Such tasks
get a ``gpu`` requirement with these reasons, so the judge skips them under
the interpreter with a stated reason instead of reporting a broken reference.
The reading is syntactic: a use in a branch never taken still counts.
"""

from __future__ import annotations

import ast

from geak_core.api.astutil import dotted_name

# torch.cuda functions that work (harmlessly) without a GPU.
SAFE_TORCH_CUDA = frozenset({
    "is_available", "device_count", "manual_seed", "manual_seed_all", "empty_cache",
    "is_initialized", "seed", "seed_all",
})


def _is_cuda_string(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "cuda" or node.value.startswith("cuda:"))
    )


def _torch_cuda_calls(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted_name(node.func)
            if name.startswith("torch.cuda.") and name.split(".")[2] not in SAFE_TORCH_CUDA:
                found.add(name)
    return found


def interpreter_blockers(kernel: ast.Module, test: ast.Module) -> list[str]:
    """Reasons the task cannot run under the Triton interpreter (empty when none is seen)."""
    reasons = []
    libdevice = any(
        (isinstance(n, ast.Attribute) and n.attr == "libdevice")
        or (isinstance(n, ast.Name) and n.id == "libdevice")
        or (isinstance(n, ast.alias) and n.name.split(".")[-1] == "libdevice")
        for n in ast.walk(kernel)
    )
    if libdevice:
        reasons.append("its kernels call libdevice, which the Triton interpreter does not implement")
    cuda_device = any(_is_cuda_string(n) for n in ast.walk(kernel)) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "cuda"
        and not n.args for n in ast.walk(kernel)
    )
    if cuda_device:
        reasons.append("its reference code places tensors on 'cuda'")
    calls = _torch_cuda_calls(kernel) | _torch_cuda_calls(test)
    if calls:
        reasons.append(f"it calls {', '.join(sorted(calls))}, which needs a GPU")
    bfloat16 = any(
        (isinstance(n, ast.Attribute) and n.attr == "bfloat16")
        or (isinstance(n, ast.Constant) and n.value == "bfloat16")
        for tree in (kernel, test) for n in ast.walk(tree)
    )
    if bfloat16:
        reasons.append("it uses bfloat16, which the Triton interpreter does not support")
    return reasons
