"""A candidate's tunable launch knobs, found by reading its source (never by running it).

A knob is one integer literal in the source whose value is a launch configuration choice:

* a ``tl.constexpr`` parameter of a ``@triton.jit`` kernel of the module, given a literal
  at a launch site (``kernel[grid](x, y, BLOCK_SIZE=128)`` or positionally), or through a
  name the enclosing function (or the module) binds once to a literal (``BLOCK = 128``);
* ``num_warps`` / ``num_stages`` at a launch site; with ``implicit=True`` also where a launch
  of a kernel without ``@triton.autotune`` leaves them out (``Knob.insert``: Triton's default
  is then the knob's value, 4 warps, 3 stages or 2 on HIP, and a variant writes the option
  after the launch's last argument);
* the kwargs and ``num_warps`` / ``num_stages`` of each ``triton.Config`` of an
  ``@triton.autotune`` list (written in the decorator, or in a module-level list it names);
* the AMD-only ``waves_per_eu``, ``matrix_instr_nonkdim`` and ``kpack`` in either place
  (``Knob.hip_only``: proposed only for a HIP target).

A block size written again as a literal in the launch's grid, as the divisor of a ``cdiv``
or a ``//`` (``kernel[(triton.cdiv(n, 64),)](..., BLOCK_SIZE=64)``, the grid written there
or bound once to a name), is tied to its knob (``Knob.tied``) when no other block knob of
that launch, and no other divisor of that grid, has the same value: a variant rewrites both.

Each knob carries the exact span of its literal, so that a variant changes that text only
(an implicit one: the empty span where its option is written).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from geak_core.api.astutil import dotted_name, parse_source

HIP_ONLY = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
LAUNCH_OPTIONS = ("num_warps", "num_stages", *HIP_ONLY)
DEFAULT_WARPS = 4  # Triton's num_warps where a launch gives none (NVIDIA and AMD)
DEFAULT_STAGES = {False: 3, True: 2}  # Triton's num_stages where a launch gives none, by "is HIP"
KINDS = ("block", "warps", "stages", *HIP_ONLY)
_BLOCK_NAME = re.compile(r"BLOCK|TILE|(^|_)B[MNK]($|_)", re.IGNORECASE)


@dataclass(frozen=True)
class Span:
    """Where a literal lies: 1-based lines, 0-based character columns (end exclusive)."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Knob:
    """One tunable literal of a candidate.

    ``name`` is the parameter or option it sets (``BLOCK_SIZE``, ``num_warps``); ``kernel``
    the ``@triton.jit`` function it configures; ``site`` ``"launch"`` or ``"config"``
    (``config`` then numbers the ``triton.Config`` in its list, from 0); ``kind`` one of
    ``KINDS``: ``block`` for a power-of-two constexpr whose name says it is a block or
    tile size.
    """

    name: str
    kernel: str
    kind: str
    value: int
    span: Span
    site: str
    config: int | None = None
    tied: tuple[Span, ...] = ()  # the same literal in the launch's grid, rewritten with it
    # Not written in the source (a launch option left at Triton's default): ``span`` is empty,
    # after the launch's last argument, and a variant writes ``insert.format(value)`` there.
    insert: str = ""

    @property
    def implicit(self) -> bool:
        return bool(self.insert)

    @property
    def hip_only(self) -> bool:
        return self.kind in HIP_ONLY


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return dotted_name(target) in ("triton.jit", "jit")


def _is_autotune(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Call) and dotted_name(decorator.func) in ("triton.autotune", "autotune")


def _is_constexpr(annotation: ast.expr | None) -> bool:
    return annotation is not None and dotted_name(annotation).split(".")[-1] == "constexpr"


def _int_literal(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _kind(name: str, value: int) -> str | None:
    if name == "num_warps":
        return "warps"
    if name == "num_stages":
        return "stages"
    if name in HIP_ONLY:
        return name
    if _power_of_two(value) and _BLOCK_NAME.search(name):
        return "block"
    return None


class _Source:
    """Byte columns (what ``ast`` gives) turned into character columns."""

    def __init__(self, code: str) -> None:
        self.lines = code.splitlines(keepends=True)

    def column(self, line: int, byte_col: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        return Span(node.lineno, self.column(node.lineno, node.col_offset),
                    node.end_lineno or node.lineno, self.column(node.end_lineno or node.lineno,
                                                                node.end_col_offset or 0))


@dataclass
class _Kernel:
    name: str
    params: list[str]
    constexpr: set[str]
    autotuned: set[str]
    has_autotune: bool = False


def _bindings(scope: ast.AST) -> tuple[dict[str, ast.Constant], set[str]]:
    """The names bound exactly once in ``scope`` (not in nested functions) to an int literal,
    and every name ``scope`` binds (a function's parameters included)."""
    counts: dict[str, int] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        every = [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs,
                 scope.args.vararg, scope.args.kwarg]
        for arg in every:
            if arg is not None:
                counts[arg.arg] = 2  # a parameter is never a literal bound once
    literal: dict[str, ast.Constant] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            counts[name.id] = counts.get(name.id, 0) + 1
                            if (not isinstance(child, ast.AugAssign) and target is name
                                    and _int_literal(child.value) is not None):
                                literal[name.id] = child.value  # type: ignore[assignment]
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr, ast.With)):
                stored = ([item.optional_vars for item in child.items if item.optional_vars]
                          if isinstance(child, ast.With) else [child.target])
                for target in stored:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            counts[name.id] = counts.get(name.id, 0) + 1
            visit(child)

    visit(scope)
    return {name: node for name, node in literal.items() if counts.get(name) == 1}, set(counts)


def _config_lists(tree: ast.Module, decorator: ast.Call) -> ast.List | None:
    for keyword in decorator.keywords:
        if keyword.arg == "configs":
            value = keyword.value
            if isinstance(value, ast.List):
                return value
            if isinstance(value, ast.Name):
                for node in tree.body:
                    if (isinstance(node, ast.Assign) and isinstance(node.value, ast.List)
                            and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)):
                        return node.value
    if decorator.args and isinstance(decorator.args[0], ast.List):
        return decorator.args[0]
    return None


def find_knobs(code: str, *, implicit: bool = False, hip: bool = False) -> list[Knob]:
    """Every tunable knob of ``code``, in source order; a literal shared by several launches
    (a name bound once) is one knob, of the first kernel that uses it. ``implicit``: also the
    ``num_warps`` and ``num_stages`` a launch leaves at Triton's default (of a HIP target
    with ``hip``), where its kernel has no autotuner and the launch no ``**kwargs``."""
    tree = parse_source(code)
    source = _Source(code)
    kernels: dict[str, _Kernel] = {}
    found: dict[Span, Knob] = {}
    absent: list[Knob] = []

    def add(name: str, kernel: str, node: ast.AST, site: str, config: int | None = None) -> Knob | None:
        value = _int_literal(node)
        kind = _kind(name, value) if value is not None else None
        if kind is None:
            return None
        span = source.span(node)
        return found.setdefault(span, Knob(name, kernel, kind, value, span, site, config))  # type: ignore[arg-type]

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list):
            args = [*node.args.posonlyargs, *node.args.args]
            kernel = _Kernel(node.name, [a.arg for a in args],
                             {a.arg for a in args if _is_constexpr(a.annotation)}, set())
            kernels[node.name] = kernel
            for decorator in node.decorator_list:
                if not _is_autotune(decorator):
                    continue
                kernel.has_autotune = True
                configs = _config_lists(tree, decorator)  # type: ignore[arg-type]
                for index, config in enumerate(configs.elts if configs else []):
                    if not (isinstance(config, ast.Call) and dotted_name(config.func).endswith("Config")):
                        continue
                    if config.args and isinstance(config.args[0], ast.Dict):
                        for key, value in zip(config.args[0].keys, config.args[0].values, strict=True):
                            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                                kernel.autotuned.add(key.value)
                                add(key.value, node.name, value, "config", index)
                    for keyword in config.keywords:
                        if keyword.arg in LAUNCH_OPTIONS:
                            add(keyword.arg, node.name, keyword.value, "config", index)

    scopes: list[ast.AST] = [tree, *(n for n in ast.walk(tree)
                                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    module_bound = _bindings(tree)[0]
    for scope in scopes:
        bound, local = _bindings(scope)
        if scope is not tree:
            bound = {**{k: v for k, v in module_bound.items() if k not in local}, **bound}
        for call in _own_calls(scope):
            if not isinstance(call.func, ast.Subscript):
                continue
            launched = dotted_name(call.func.value).split(".")[-1]
            kernel = kernels.get(launched)
            if kernel is None:
                continue
            added: list[Knob | None] = []
            for position, arg in enumerate(call.args):
                if position < len(kernel.params):
                    param = kernel.params[position]
                    if param in kernel.constexpr and param not in kernel.autotuned:
                        target = _literal(arg, bound)
                        if target is not None:
                            added.append(add(param, launched, target, "launch"))
            for keyword in call.keywords:
                if keyword.arg is None:
                    continue
                if keyword.arg in LAUNCH_OPTIONS or (keyword.arg in kernel.constexpr
                                                     and keyword.arg not in kernel.autotuned):
                    target = _literal(keyword.value, bound)
                    if target is not None:
                        added.append(add(keyword.arg, launched, target, "launch"))
            if implicit and not kernel.has_autotune:
                absent.extend(_implicit_options(call, launched, source, hip))
            blocks = [k for k in added if k is not None and k.kind == "block"]
            divisors = _grid_divisors(_grid_expression(call.func.slice, scope, local))
            for divisor in divisors:
                if [d.value for d in divisors].count(divisor.value) > 1:
                    continue  # which dimension each belongs to is not written down
                same = [k for k in blocks if k.value == divisor.value]
                span = source.span(divisor)
                if len({k.span for k in same}) == 1 and span not in found[same[0].span].tied:
                    knob = found[same[0].span]
                    found[knob.span] = replace(knob, tied=(*knob.tied, span))
    return sorted([*found.values(), *absent], key=lambda k: (k.span.line, k.span.col, k.implicit))


def _implicit_options(call: ast.Call, kernel: str, source: _Source, hip: bool) -> list[Knob]:
    """The ``num_warps`` and ``num_stages`` that ``call`` (a launch) leaves at their defaults,
    as knobs written after its last argument: none where it passes ``**kwargs`` (they may be
    in it) or no argument at all."""
    if any(keyword.arg is None for keyword in call.keywords):
        return []
    given = {keyword.arg for keyword in call.keywords}
    arguments: list[ast.AST] = [*call.args, *call.keywords]
    if not arguments:
        return []
    last = max(arguments, key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0))
    end = source.span(last)
    where = Span(end.end_line, end.end_col, end.end_line, end.end_col)
    knobs = []
    for name, kind, value in (("num_warps", "warps", DEFAULT_WARPS), ("num_stages", "stages", DEFAULT_STAGES[hip])):
        if name not in given:
            knobs.append(Knob(name, kernel, kind, value, where, "launch", insert=f", {name}={{}}"))
    return knobs


def _grid_expression(grid: ast.expr, scope: ast.AST, local: set[str]) -> ast.expr:
    """The launch's grid: written in the subscript, or the value of the one assignment of
    the name written there (in ``scope``, which must bind it)."""
    if not isinstance(grid, ast.Name) or grid.id not in local:
        return grid
    values = [node.value for node in _own_nodes(scope) if isinstance(node, ast.Assign)
              and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id == grid.id]
    return values[0] if len(values) == 1 else grid


def _grid_divisors(grid: ast.expr) -> list[ast.Constant]:
    """Int literals the grid divides by: ``cdiv(x, 64)`` and ``x // 64``."""
    found = []
    for node in ast.walk(grid):
        divisor = None
        if isinstance(node, ast.Call) and dotted_name(node.func).split(".")[-1] == "cdiv" and len(node.args) == 2:
            divisor = node.args[1]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            divisor = node.right
        if divisor is not None and _int_literal(divisor) is not None:
            found.append(divisor)
    return found  # type: ignore[return-value]


def _literal(value: ast.expr, bound: dict[str, ast.Constant]) -> ast.AST | None:
    """The int literal ``value`` is, or the one the name ``value`` is bound to once."""
    if _int_literal(value) is not None:
        return value
    if isinstance(value, ast.Name):
        return bound.get(value.id)
    return None


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` outside its nested functions (each function is its own scope)."""
    nodes: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            nodes.append(child)
            visit(child)

    visit(scope)
    return nodes


def _own_calls(scope: ast.AST) -> list[ast.Call]:
    return [node for node in _own_nodes(scope) if isinstance(node, ast.Call)]
