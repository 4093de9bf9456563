"""One TritonBench-G task file: kernel part, separator, test part.

A task file is the reference code, a line of exactly 146 ``#``, then a test
part that defines ``def test_...():`` and (usually) runs it at module level as
``result_gold = test_...()``. This module splits the file and reads both parts
with ``ast`` only (nothing is executed): which test function to call, which
variable the original stored the result in, which names of the kernel part
the test calls (the entry points a candidate must keep).

The same analysis runs when the suite loads (to list tasks and reject broken
files) and inside the judge's child process (to run the test), so both agree.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from geak_core.api.astutil import parse_source
from geak_core.api.tasks import EntryPoint

from geak_suite_tritonbench.interpreter import interpreter_blockers

SEPARATOR = "#" * 146
JIT_DECORATORS = ("jit", "autotune", "heuristics")


class TaskFileError(Exception):
    """A task file that cannot be used; the message says why and where."""


@dataclass(frozen=True)
class TestCall:
    """One module-level call of a test function whose value the judge compares."""

    variable: str  # where the original stored the result ("result_gold", ...)
    function: str
    expression: str  # the call as source, e.g. "test_add()"


@dataclass
class TestPlan:
    """How to run the test part: which statements to drop and which calls to make."""

    calls: list[TestCall]
    dropped: list[int]  # indices of top-level statements of the test part not executed
    result_variable: str | None  # of the original's ``result_gold = ...`` line; None: no such line
    quirks: list[str] = field(default_factory=list)

    @property
    def test_function(self) -> str:
        return self.calls[0].function


@dataclass
class TaskFile:
    path: Path
    text: str
    separator_line: int  # 1-based line number of the separator
    kernel_source: str  # lines before the separator
    test_source: str  # lines after the separator
    plan: TestPlan
    entry_points: list[EntryPoint]
    interpreter_blockers: list[str] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.path.stem


def find_separator(text: str) -> int | None:
    """1-based line number of the first separator line, or None."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() == SEPARATOR:
            return number
    return None


def split_source(text: str, where: str = "<task>") -> tuple[str, str, int]:
    """(kernel part, test part, separator line); raises TaskFileError without a separator."""
    line = find_separator(text)
    if line is None:
        raise TaskFileError(
            f"{where}: no separator line (a line of exactly 146 '#') between the "
            "reference code and its test"
        )
    lines = text.splitlines(keepends=True)
    return "".join(lines[: line - 1]), "".join(lines[line:]), line


def parse_part(source: str, where: str, part: str, line_offset: int = 0) -> ast.Module:
    """Parse one part; line numbers in the error are those of the whole file."""
    try:
        tree = parse_source(source)
    except SyntaxError as exc:
        line = (exc.lineno or 0) + line_offset
        raise TaskFileError(f"{where}:{line}: syntax error in the {part}: {exc.msg}") from None
    if line_offset:
        ast.increment_lineno(tree, line_offset)
    return tree


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _callable_without_arguments(node: ast.FunctionDef) -> bool:
    args = node.args
    positional = len(args.posonlyargs) + len(args.args)
    kw_missing = any(d is None for d in args.kw_defaults)
    return positional <= len(args.defaults) and not kw_missing


def _called_test(node: ast.AST, tests: set[str]) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in tests:
        return node.func.id
    return None


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def plan_test(tree: ast.Module, where: str = "<task>", reference_names: Collection[str] = ()) -> TestPlan:
    """Find the test calls of a parsed test part and the statements the judge skips.

    Known quirks of the data: a missing ``result_gold = ...`` line (the test
    function is then called directly), a differently named result variable,
    several result lines (their values are compared as a dict keyed by
    variable name), and a test part that repeats the reference code's own
    functions (``reference_names``: what the kernel part defines). Run as the
    file is, such a repeat would shadow the candidate's code and the test would
    check only its own copy; the repeats are dropped, so the test calls the
    candidate's.
    """
    tests = {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
    }
    if not tests:
        raise TaskFileError(f"{where}: the test part defines no 'def test_...()' function")

    calls: list[TestCall] = []
    bare: list[TestCall] = []
    dropped: list[int] = []
    quirks: list[str] = []

    def scan(statements: list[ast.stmt], top: bool) -> None:
        for index, node in enumerate(statements):
            if top and _is_main_guard(node):
                scan(node.body, top=False)
                continue
            value = getattr(node, "value", None)
            target = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target = node.target
            function = _called_test(value, tests) if value is not None else None
            if function and isinstance(target, ast.Name):
                calls.append(TestCall(target.id, function, ast.unparse(value)))
                if top:
                    dropped.append(index)
            elif function and isinstance(node, ast.Expr):
                bare.append(TestCall("result_gold", function, ast.unparse(value)))
                if top:
                    dropped.append(index)

    scan(tree.body, top=True)
    repeated = [
        (index, node.name) for index, node in enumerate(tree.body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name in reference_names and node.name not in tests
    ]
    if repeated:
        dropped.extend(index for index, _ in repeated)
        quirks.append("the test part repeats the reference's " + ", ".join(name for _, name in repeated)
                      + "; dropped, so the test calls the candidate's")
    has_result_line = bool(calls)
    if calls:
        names = [c.variable for c in calls]
        if names != ["result_gold"]:
            quirks.append(f"result stored in {', '.join(names)}")
    elif bare:
        calls = bare[:1]
        quirks.append(f"no result line; {calls[0].function}() is called directly")
    else:
        runnable = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name in tests and _callable_without_arguments(n)
        ]
        if not runnable:
            raise TaskFileError(
                f"{where}: no test function can be called without arguments "
                f"({', '.join(sorted(tests))})"
            )
        calls = [TestCall(name, name, f"{name}()") for name in runnable]
        quirks.append(f"no result line; {', '.join(runnable)} called directly")

    variables = {c.variable for c in calls}
    for index, node in enumerate(tree.body):
        if index in dropped or isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import,
                                                 ast.ImportFrom, ast.AsyncFunctionDef)):
            continue
        if _is_main_guard(node):
            continue
        names = _names_in(node)
        if names & variables or any(
            _called_test(n, tests) for n in ast.walk(node) if isinstance(n, ast.Call)
        ):
            dropped.append(index)
    return TestPlan(
        calls=calls,
        dropped=sorted(set(dropped)),
        result_variable=calls[0].variable if has_result_line else None,
        quirks=quirks,
    )


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append("*" + args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append("**" + args.kwarg.arg)
    return tuple(names)


def _constexpr(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    found = []
    for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
        if a.annotation is not None and "constexpr" in ast.unparse(a.annotation):
            found.append(a.arg)
    return tuple(found)


def _definitions(tree: ast.Module) -> dict[str, EntryPoint]:
    """Top-level names the kernel part defines (functions, classes, assigned names)."""
    found: dict[str, EntryPoint] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            jit = any(_decorator_name(d) in JIT_DECORATORS for d in node.decorator_list)
            found[node.name] = EntryPoint(
                name=node.name,
                kind="triton.jit" if jit else "function",
                params=_params(node),
                constexpr=_constexpr(node) if jit else (),
            )
        elif isinstance(node, ast.ClassDef):
            found[node.name] = EntryPoint(name=node.name, kind="function")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = EntryPoint(name=target.id, kind="function")
    return found


def defined_names(kernel_source: str, where: str = "<task>") -> set[str]:
    """Top-level names the kernel part (reference code) defines."""
    return set(_definitions(parse_part(kernel_source, where, "reference code")))


def _called_base(func: ast.expr) -> str | None:
    """The name a call starts from: ``f(...)``, ``F.apply(...)``, ``kernel[grid](...)``."""
    while isinstance(func, (ast.Attribute, ast.Subscript)):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def entry_points(kernel: ast.Module, test: ast.Module, dropped: Collection[int] = ()) -> list[EntryPoint]:
    """Names of the kernel part that the test part calls, in order of first call
    (``dropped``: indices of the test part's top-level statements the judge does not run)."""
    defined = _definitions(kernel)
    kept = [n for i, n in enumerate(test.body) if i not in dropped or not isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    test = ast.Module(body=kept, type_ignores=[])
    local = {
        n.id for n in ast.walk(test) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    local |= {n.name for n in test.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    ordered: dict[str, EntryPoint] = {}
    calls = sorted(
        (n for n in ast.walk(test) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for call in calls:
        name = _called_base(call.func)
        if name and name in defined and name not in local and name not in ordered:
            ordered[name] = defined[name]
    return list(ordered.values())


def read_task_file(path: Path) -> TaskFile:
    """Read and analyse one task file; raises TaskFileError naming the problem."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{where}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise TaskFileError(f"{where}: cannot be read ({exc.strerror})") from None
    kernel_source, test_source, line = split_source(text, where)
    kernel = parse_part(kernel_source, where, "reference code")
    test = parse_part(test_source, where, "test part", line_offset=line)
    plan = plan_test(test, where, reference_names=set(_definitions(kernel)))
    points = entry_points(kernel, test, plan.dropped)
    if not points:
        raise TaskFileError(
            f"{where}: the test part calls no function defined in the reference code, "
            "so there is nothing a candidate must provide"
        )
    return TaskFile(
        path=path,
        text=text,
        separator_line=line,
        kernel_source=kernel_source,
        test_source=test_source,
        plan=plan,
        entry_points=points,
        interpreter_blockers=interpreter_blockers(kernel, test),
    )
