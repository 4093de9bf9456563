"""The import graph of the project's packages: geak_core's wings import only downwards, and no
module imports another that, however far round, imports it back.

Every import statement of every module of geak_core, of each bundled plugin and of the
templates is read with ``ast``, at module level and inside functions alike (a function's
import runs too, only later). Imports under ``if TYPE_CHECKING:`` are left out: they never
run, so they close no circle at import time and load no higher wing; they name types for
annotations (``api.components`` names ``api.lineage.LineageState`` so, and ``api.scaling``
names ``engine.store.RunStore``). docs/architecture.md says what each wing holds and why.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The wings of geak_core, each with the wings it may import.
MAY_IMPORT: dict[str, set[str]] = {
    "api": set(),
    "kit": {"api"},
    "engine": {"api", "kit"},
    "reporting": {"api", "kit", "engine"},
    "cli": {"api", "kit", "engine", "reporting"},
}
# The package's own modules (the re-exports of api's names, the old paths) count as api.
FACADE = ("geak_core", "geak_core._moved")
# What a bundled plugin may import of geak_core: never what reads runs back, nor the CLI.
PLUGINS_MAY_IMPORT = {"api", "kit", "engine"}
# The longest chain of imports between wings: cli -> reporting -> engine -> kit -> api.
MAX_FLOORS = 4


@cache
def project_modules() -> dict[str, Path]:
    """Every module of the project's packages (their tests left out), by dotted name."""
    modules = {}
    for folder in [ROOT / "core", *sorted((ROOT / "plugins").iterdir()), ROOT / "templates"]:
        for init in sorted(folder.glob("*/__init__.py")):
            for path in sorted(init.parent.rglob("*.py")):
                parts = path.relative_to(folder).with_suffix("").parts
                if "tests" not in parts:
                    modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(module: str, path: Path) -> set[str]:
    """The dotted names ``module`` imports (``from a import b`` gives ``a.b``), not counting
    those under ``if TYPE_CHECKING:``."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up for each dot past the first
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return names


@cache
def import_graph() -> dict[str, set[str]]:
    """Each project module, with the project modules it imports (a name resolves to the
    longest module it starts with: ``a.b.Name`` to ``a.b``)."""
    modules = project_modules()
    graph = {}
    for module, path in modules.items():
        targets = set()
        for name in imported_names(module, path):
            parts = name.split(".")
            found = next((".".join(parts[:n]) for n in range(len(parts), 0, -1)
                          if ".".join(parts[:n]) in modules), None)
            if found is not None and found != module:
                targets.add(found)
        graph[module] = targets
    return graph


def wing_of(module: str) -> str | None:
    """The wing of a module of geak_core (None: not geak_core's)."""
    if module in FACADE:
        return "api"
    top, _, rest = module.partition(".")
    return rest.split(".")[0] if top == "geak_core" else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def wing_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {wing: set() for wing in MAY_IMPORT}
    for module, targets in import_graph().items():
        wing = wing_of(module)
        if wing in edges:  # a module outside the wings is test_every_module_of_core_sits_in_a_wing's
            edges[wing] |= {wing_of(t) for t in targets if wing_of(t) in edges and wing_of(t) != wing}
    return edges


def test_the_graph_sees_core_and_every_plugin():
    graph = import_graph()
    assert {"geak_core.engine.agent", "geak_core.api.components", "geak_evaluator_triton.child_jobs",
            "geak_templates"} <= set(graph)
    assert "geak_core.api.components" in graph["geak_core.engine.agent"]


def test_every_module_of_core_sits_in_a_wing():
    astray = [m for m in project_modules() if m.startswith("geak_core") and wing_of(m) not in MAY_IMPORT]
    assert astray == []


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_each_wing_imports_only_the_wings_beneath_it():
    upward = [f"{module} ({wing_of(module)}) imports {target} ({wing_of(target)})"
              for module, targets in sorted(import_graph().items()) if wing_of(module) in MAY_IMPORT
              for target in sorted(targets)
              if wing_of(target) not in (None, wing_of(module))
              and wing_of(target) not in MAY_IMPORT[wing_of(module)]]
    assert upward == []


def test_core_stands_on_at_most_four_floors():
    edges = wing_edges()

    @cache
    def floor(wing: str) -> int:  # the longest chain of imports from ``wing`` down
        return max((1 + floor(lower) for lower in edges[wing]), default=0)

    floors = {wing: floor(wing) for wing in edges}
    assert max(floors.values()) <= MAX_FLOORS, floors


def test_plugins_import_core_api_kit_and_engine_only():
    reached = [f"{module} imports {target}" for module, targets in sorted(import_graph().items())
               if wing_of(module) is None for target in sorted(targets)
               if wing_of(target) is not None and wing_of(target) not in PLUGINS_MAY_IMPORT]
    assert reached == []


def test_the_checks_catch_a_circle_and_an_upward_import(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x.y\n"
                      "def f():\n    from geak_core.engine import agent\n    from .sibling import g\n")
    assert imported_names("geak_core.api.m", source) == {"typing.TYPE_CHECKING", "geak_core.engine.agent",
                                                         "geak_core.api.sibling.g"}
    assert wing_of("geak_core.engine.agent") not in MAY_IMPORT[wing_of("geak_core.api.m")]
