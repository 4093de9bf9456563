"""Every recipe key does something: each field of every options schema (core sections and
every bundled component) is read somewhere other than its own validation.

A key that is validated, shown by ``recipe show`` and stored, but read by nothing, is a
stub: users set it and nothing changes. This walk finds such keys statically, from the
source, so it covers code paths a CPU test run never takes (GPU timing, live providers).

What counts as a read: ``X.<field>`` (or ``getattr(X, "<field>")``) where ``X`` is the
options object: a name or attribute called ``options``/``opts``, the recipe section
(``recipe.run``, ``self.recipe.agent``), a parameter annotated with the schema's class, or
a name assigned from one of those (``opts = self.options``, ``agent = self.recipe.agent``).
What does not count: reads inside the schema's own class body, inside validation
(``validate``, ``__post_init__``, ``required_env``, the recipe loader) and inside any
function those call by name (``check_http_options``, ``_check``).
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from collections.abc import Iterable
from pathlib import Path

from geak_core.api.components import KINDS
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import COMPONENT_SECTIONS, CORE_KEYS_OF_SECTION, PLAIN_SECTIONS

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core" / "geak_core"

VALIDATORS = {"validate", "__post_init__", "required_env", "load_recipe", "validate_options"}
ALIAS_ROOTS = {"options", "opts"}

# Options of plugins this change may not edit, that look unread. Each entry names the
# option, why it is listed, and stays only until that plugin reads (or drops) it.
KNOWN_UNREAD: dict[tuple[str, str], str] = {}


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.BoolOp):  # self.options = options or Defaults()
        for value in node.values:
            name = _last_name(value)
            if name is not None:
                return name
    return None


def _mentions(annotation: ast.AST | None, class_name: str) -> bool:
    if annotation is None:
        return False
    return any(
        (isinstance(n, ast.Name) and n.id == class_name)
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and class_name in n.value)
        for n in ast.walk(annotation)
    )


def _functions(trees: Iterable[ast.AST]) -> dict[str, list[ast.AST]]:
    found: dict[str, list[ast.AST]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, []).append(node)
    return found


def _called_names(node: ast.AST) -> set[str]:
    """Functions ``node`` calls by plain name (``_check(self)``) or on ``self``
    (``self._check()``); calls on other objects (``os.environ.get``) are not followed."""
    names = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Name):
            names.add(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            names.add(func.attr)
    return names


def unread_fields(
    schema: type, sources: Iterable[Path], aliases: Iterable[str] = (), skip: Iterable[str] = ()
) -> list[str]:
    """Fields of ``schema`` that no source file reads outside validation."""
    class_name = schema.__name__
    fields = [f.name for f in dataclasses.fields(schema) if f.init and f.name not in set(skip)]
    trees = [ast.parse(path.read_text(), filename=str(path)) for path in sources]
    functions = _functions(trees)

    excluded: set[int] = set()  # id() of nodes whose bodies are validation or the schema
    validators = set(VALIDATORS)
    pending = list(validators)
    while pending:  # functions called by validators validate too
        for node in functions.get(pending.pop(), []):
            for called in _called_names(node) - validators:
                if called in functions:
                    validators.add(called)
                    pending.append(called)
    for tree in trees:
        for node in ast.walk(tree):
            if (isinstance(node, ast.ClassDef) and node.name == class_name) or (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in validators
            ):
                excluded.update(id(n) for n in ast.walk(node))

    names = set(ALIAS_ROOTS) | set(aliases)
    for tree in trees:  # parameters and variables annotated with the schema's class
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and _mentions(node.annotation, class_name):
                names.add(node.arg)
            elif isinstance(node, ast.AnnAssign) and _mentions(node.annotation, class_name):
                target = _last_name(node.target)
                if target:
                    names.add(target)
    while True:  # names assigned from an alias are aliases
        grown = set(names)
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and _last_name(node.value) in names:
                    for target in node.targets:
                        name = _last_name(target)
                        if name:
                            grown.add(name)
        if grown == names:
            break
        names = grown

    read: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if id(node) in excluded:
                continue
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and node.attr in fields
                and _last_name(node.value) in names
            ):
                read.add(node.attr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and _last_name(node.args[0]) in names
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in fields
            ):
                read.add(node.args[1].value)
    return [f for f in fields if f not in read]


def _package_sources(schema: type) -> list[Path]:
    package = sys.modules[schema.__module__.split(".")[0]]
    assert package.__file__ is not None
    return sorted(Path(package.__file__).parent.rglob("*.py"))


def _bundled_schemas() -> dict[type, list[str]]:
    schemas: dict[type, list[str]] = {}
    manager = PluginManager()
    for kind in KINDS:
        for name, spec in sorted(manager.components(kind).items()):
            if spec.options is not None:
                schemas.setdefault(spec.options, []).append(f"{kind} {name!r} ({spec.plugin})")
    return schemas


def test_every_option_of_every_bundled_component_is_read_outside_validation():
    schemas = _bundled_schemas()
    # the bundled components that take options: the three backends, codesim, opro, the
    # evaluator, the TritonBench suite, the geak reflector and policy
    assert len(schemas) >= 9, schemas
    problems = []
    allowed = dict(KNOWN_UNREAD)
    for schema, users in schemas.items():
        for name in unread_fields(schema, _package_sources(schema)):
            if allowed.pop((schema.__name__, name), None) is None:
                problems.append(f"{', '.join(users)}: option {name!r} ({schema.__name__}) is never read")
    problems += [f"{c}.{n} is read now (or gone): drop it from KNOWN_UNREAD" for c, n in allowed]
    assert not problems, "\n".join(problems)


def test_every_key_of_the_core_recipe_sections_is_read_outside_validation():
    sections = {**PLAIN_SECTIONS, **CORE_KEYS_OF_SECTION}
    sources = sorted(CORE.rglob("*.py"))
    problems = []
    for section, schema in sections.items():
        # the key naming a section's component is read by the loader to pick the component
        chooser = COMPONENT_SECTIONS[section][1] if section in COMPONENT_SECTIONS else None
        for name in unread_fields(schema, sources, aliases={section}, skip=[chooser] if chooser else []):
            problems.append(f"[{section}] {name} is never read")
    assert not problems, "\n".join(problems)


# -- the walk itself ----------------------------------------------------------

SAMPLE = '''
import os
from dataclasses import dataclass


@dataclass
class SampleOptions:
    used: int = 1
    via_alias: int = 2
    via_getattr: int = 3
    via_annotation: int = 4
    in_a_method_named_like_a_library_call: int = 8
    validated_only: int = 5
    validated_in_helper: int = 6
    other_object: int = 7

    def __post_init__(self):
        if self.validated_only < 0 or not os.environ.get("HOME"):
            raise ValueError("validated_only")
        _check(self)


def _check(options):
    if options.validated_in_helper < 0:
        raise ValueError("validated_in_helper")


class Component:
    def __init__(self, options=None):
        self.options = options or SampleOptions()
        opts = self.options
        self.size = self.options.used + opts.via_alias + getattr(self.options, "via_getattr")
        self.task.other_object = 1
        print(self.task.other_object)


    def get(self):  # shares its name with os.environ.get, called by validation
        return self.options.in_a_method_named_like_a_library_call


def build(config: SampleOptions):
    return config.via_annotation
'''


def _sample_schema(tmp_path: Path) -> tuple[type, Path]:
    source = tmp_path / "sample_options.py"
    source.write_text(SAMPLE)
    namespace: dict[str, object] = {"__name__": "sample_options"}
    exec(compile(SAMPLE, str(source), "exec", dont_inherit=True), namespace)
    return namespace["SampleOptions"], source  # type: ignore[return-value]


def test_the_walk_flags_fields_read_only_by_validation_or_on_other_objects(tmp_path):
    schema, source = _sample_schema(tmp_path)
    assert unread_fields(schema, [source]) == ["validated_only", "validated_in_helper", "other_object"]


def test_the_walk_finds_a_read_added_in_another_file_of_the_package(tmp_path):
    schema, source = _sample_schema(tmp_path)
    user = tmp_path / "user.py"
    user.write_text("def go(plugin):\n    return plugin.options.validated_only\n")
    assert unread_fields(schema, [source, user]) == ["validated_in_helper", "other_object"]
