"""Static check of a quantization task's candidate: scales computed in a Triton kernel.

KernelBench-X's six quantization tasks (W8A8, W4A16) receive float inputs and
must quantize them themselves: derive the scales from the data (an abs-max,
or a min and a max), round or cast to the integer (or fp8) type, compute, and
dequantize. A candidate that calls a high-level quantization API, or derives
the scales with torch in its wrapper, does not do what the task measures.
This check reads the source with ``ast`` (nothing runs) and lists what is
missing or forbidden:

* forbidden anywhere: torch's quantization APIs (``torch.quantize_per_tensor``,
  ``torch.quantize_per_channel``, ``torch.dequantize``, ``.int_repr()``,
  ``.q_scale()``, ``.q_zero_point()``, ``torch.ops.quantized.*``,
  ``torch.ao.quantization`` / ``torch.quantization``, fake-quantize ops);
* forbidden outside ``@triton.jit`` functions: deriving ranges with torch
  (``amax``, ``amin``, ``aminmax``, ``max``/``min`` of an ``abs()``);
* required inside some ``@triton.jit`` function: a range reduction
  (``tl.max`` / ``tl.min`` / ``tl.reduce``) together with ``abs`` or with both
  ``max`` and ``min`` (the scale), and a discretisation (a cast to an integer
  or fp8 type with ``.to(...)`` / ``tl.cast``, or a rounding call such as
  ``rint``, ``round``, ``nearbyint``, ``floor``).

It is a filter against implementations that skip the quantization, like the
benchmark's own check, not a proof that the kernel quantizes correctly: the
approximation contract (``precision``) judges the numbers.
"""

from __future__ import annotations

import ast

from geak_core.api.astutil import dotted_name, parse_source

FORBIDDEN_NAMES = {
    "quantize_per_tensor", "quantize_per_tensor_dynamic", "quantize_per_channel",
    "dequantize", "int_repr", "q_scale", "q_zero_point", "q_per_channel_scales",
    "q_per_channel_zero_points", "fake_quantize_per_tensor_affine",
    "fake_quantize_per_channel_affine", "quantize_dynamic",
}
FORBIDDEN_PREFIXES = ("torch.ops.quantized", "torch.ao.quantization", "torch.quantization",
                      "torch.ao.nn.quantized", "torch.nn.quantized")
TORCH_RANGE_CALLS = {"amax", "amin", "aminmax"}
REDUCTIONS = {"max", "min", "reduce"}
ROUNDING = {"rint", "round", "nearbyint", "floor", "llrint", "lrint", "trunc"}
QUANT_TYPES = ("int8", "uint8", "int16", "int32", "int4", "float8")


def _is_kernel(node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if dotted_name(target, calls=True).rpartition(".")[2] == "jit":
            return True
    return False


def _last(call: ast.Call) -> str:
    return dotted_name(call.func, calls=True).rpartition(".")[2]


def _names_a_quant_type(node: ast.AST) -> bool:
    return any(t in dotted_name(node, calls=True) for t in QUANT_TYPES) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
        and any(t in node.value for t in QUANT_TYPES)
    )


def _kernel_evidence(kernels: list[ast.AST]) -> tuple[bool, bool]:
    """(a scale derivation, a discretisation) found in the kernels."""
    scale = discrete = False
    for kernel in kernels:
        calls = [n for n in ast.walk(kernel) if isinstance(n, ast.Call)]
        names = {_last(c) for c in calls}
        reductions = {n for n in names if n in REDUCTIONS}
        if reductions and ("abs" in names or {"max", "min"} <= reductions):
            scale = True
        for call in calls:
            last = _last(call)
            if last in ROUNDING:
                discrete = True
            elif last in ("to", "cast") and any(_names_a_quant_type(a) for a in
                                                [*call.args, *(k.value for k in call.keywords)]):
                discrete = True
    return scale, discrete


def check(code: str) -> list[str]:
    """What the source lacks or does that the quantization contract forbids (empty: passes)."""
    try:
        tree = parse_source(code)
    except SyntaxError as exc:
        return [f"the source does not parse (line {exc.lineno}: {exc.msg})"]
    problems: list[str] = []
    kernels = [n for n in ast.walk(tree) if _is_kernel(n)]
    inside = {id(n) for k in kernels for n in ast.walk(k)}
    for node in ast.walk(tree):
        named = isinstance(node, (ast.Attribute, ast.Name))
        dotted = dotted_name(node, calls=True) if named else ""
        if dotted and (dotted.rpartition(".")[2] in FORBIDDEN_NAMES
                       or dotted.startswith(FORBIDDEN_PREFIXES)):
            problems.append(f"line {node.lineno}: uses {dotted}, a high-level quantization API")
        if isinstance(node, ast.Call) and id(node) not in inside:
            last = _last(node)
            chain = dotted_name(node.func, calls=True)
            if last in TORCH_RANGE_CALLS or (last in ("max", "min") and "abs()" in chain):
                problems.append(f"line {node.lineno}: derives a range with {chain}() outside "
                                "a Triton kernel (scales must be computed in the kernel)")
    scale, discrete = _kernel_evidence(kernels)
    if not kernels:
        problems.append("no @triton.jit kernel")
    else:
        if not scale:
            problems.append("no kernel derives a scale (a tl.max / tl.min reduction of abs() "
                            "values, or of both max and min)")
        if not discrete:
            problems.append("no kernel discretises (a cast to an integer or fp8 type, or a "
                            "rounding call)")
    seen: set[str] = set()
    return [p for p in problems if not (p in seen or seen.add(p))]
