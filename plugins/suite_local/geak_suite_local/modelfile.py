"""A task file in KernelBench's format, read without running it.

The format (ScalingIntelligence/KernelBench's, the common way to write "a PyTorch
reference plus its inputs"):

* ``class Model(torch.nn.Module)``: the reference; ``forward`` computes the operator;
* ``get_inputs()``: the forward's inputs (tensors and plain values), drawn with torch's
  random functions, usually from module-level sizes (``batch_size = 16``);
* ``get_init_inputs()``: the constructor's arguments (optional here: none when absent);
* optionally ``class ModelNew(torch.nn.Module)``: the user's own Triton implementation,
  the starting point to make faster and the speed to beat.

What geak-core adds, all optional, as module-level literals or in a sidecar TOML file
``<stem>.toml`` beside the task file (the TOML wins, key by key):

* ``SHAPES`` / ``shapes``: input sets, each a dict of module-level names to override
  (``{"batch_size": 4096, "dim": 8192}``, optionally with ``"name"``); one case each.
  Default: one set, the file's own values;
* ``SMALL_SHAPES`` / ``small_shapes``: the input sets for the CPU interpreter (default:
  ``SHAPES``);
* ``DTYPES`` / ``dtypes``: floating dtypes the inputs and the model are cast to, one case
  per set and dtype (default ``["float32"]``, KernelBench's);
* ``ATOL`` / ``RTOL`` (``atol`` / ``rtol``): a number, or a table per dtype name
  (default: KernelBench's, 1e-4 for float32 and 1e-2 for float16 and bfloat16);
* ``DESCRIPTION`` / ``description``: text shown to the model.

Every problem is a :class:`ModelFileError` whose message starts with the file's path.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geak_core.api.astutil import parse_source

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REFERENCE_CLASS = "Model"
CANDIDATE_CLASS = "ModelNew"
INPUTS_FUNCTION = "get_inputs"
INIT_FUNCTION = "get_init_inputs"
# KernelBench's tolerances per precision (atol = rtol), from its published evaluation.
KERNELBENCH_TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
SETTINGS = ("shapes", "small_shapes", "dtypes", "atol", "rtol", "description")


class ModelFileError(ValueError):
    """A task file that cannot be a task; the message names the file and the problem."""


@dataclass(frozen=True)
class InputSet:
    """One set of module-level overrides: a case (with each dtype)."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelFile:
    path: Path
    source: str
    forward_params: tuple[str, ...]
    model_doc: str
    has_candidate: bool  # the file holds the user's own ModelNew
    shapes: list[InputSet]
    small_shapes: list[InputSet]
    dtypes: list[str]
    tolerances: dict[str, list[float]]
    description: str
    sidecar: Path | None = None

    @property
    def stem(self) -> str:
        return self.path.stem


def _fail(path: Path, problem: str) -> ModelFileError:
    return ModelFileError(f"{path}: {problem}")


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _module_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Module-level names bound by assignments, with the value node (None: not a literal)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.AST | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name) and value is not None:
                    names[leaf.id] = value
    return names


def _literal(path: Path, name: str, node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        raise _fail(path, f"{name} (line {getattr(node, 'lineno', '?')}) must be a literal "
                          "(numbers, strings, lists, dicts), so it can be read without running "
                          "the file") from None


def _forward_params(path: Path, model: ast.ClassDef) -> tuple[str, ...]:
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef)
                    and n.name == "forward"), None)
    if forward is None:
        raise _fail(path, f"class {REFERENCE_CLASS} (line {model.lineno}) defines no forward()")
    args = forward.args
    names = [a.arg for a in [*args.posonlyargs, *args.args]][1:]  # without self
    if args.vararg is not None:
        names.append(f"*{args.vararg.arg}")
    return tuple(names)


def _input_sets(path: Path, key: str, value: Any, names: dict[str, ast.AST]) -> list[InputSet]:
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise _fail(path, f"{key} must be a non-empty list of tables (dicts) of module-level "
                          f"names to override, got {value!r}")
    sets = []
    for index, entry in enumerate(value):
        overrides = {k: v for k, v in entry.items() if k != "name"}
        for name in overrides:
            if name not in names:
                close = difflib.get_close_matches(name, list(names), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise _fail(path, f"{key}[{index}]: {name!r} is not a module-level name of the "
                                  f"file{hint}")
        label = entry.get("name", f"set{index}" if len(value) > 1 else "default")
        if not isinstance(label, str) or not label.isidentifier():
            raise _fail(path, f"{key}[{index}].name must be an identifier, got {label!r}")
        sets.append(InputSet(label, overrides))
    labels = [s.name for s in sets]
    if len(set(labels)) != len(labels):
        raise _fail(path, f"{key}: input set names repeat ({', '.join(labels)})")
    return sets


def _tolerances(path: Path, atol: Any, rtol: Any, dtypes: list[str]) -> dict[str, list[float]]:
    def per_dtype(key: str, value: Any) -> dict[str, float]:
        if value is None:
            return {}
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return dict.fromkeys(dtypes, float(value))
        if isinstance(value, dict) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                for v in value.values()):
            wrong = [k for k in value if k not in FLOAT_DTYPES]
            if wrong:
                raise _fail(path, f"{key}: unknown dtype {wrong[0]!r} (expected some of "
                                  f"{', '.join(FLOAT_DTYPES)})")
            return {k: float(v) for k, v in value.items()}
        raise _fail(path, f"{key} must be a number >= 0 or a table of them per dtype, got "
                          f"{value!r}")

    atols, rtols = per_dtype("ATOL", atol), per_dtype("RTOL", rtol)
    out = {}
    for dtype in dtypes:
        default = KERNELBENCH_TOLERANCES.get(dtype, 1e-4)
        out[dtype] = [atols.get(dtype, default), rtols.get(dtype, default)]
    return out


def _sidecar(path: Path) -> tuple[Path | None, dict[str, Any]]:
    sidecar = path.with_suffix(".toml")
    if not sidecar.is_file():
        return None, {}
    try:
        data = tomllib.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _fail(sidecar, f"cannot read the task's settings: {exc}") from None
    unknown = [k for k in data if k not in SETTINGS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], SETTINGS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise _fail(sidecar, f"unknown key {unknown[0]!r}{hint}; known: {', '.join(SETTINGS)}")
    return sidecar, data


def read_model_file(path: Path) -> ModelFile:
    """The task a file in KernelBench's format describes, or a ``ModelFileError``."""
    path = Path(path).resolve()
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot read: {exc}") from None
    try:
        tree = parse_source(source, str(path))
    except SyntaxError as exc:
        raise _fail(path, f"syntax error at line {exc.lineno}: {exc.msg}") from None
    model = _class(tree, REFERENCE_CLASS)
    if model is None:
        raise _fail(path, f"no class {REFERENCE_CLASS} (the PyTorch reference, a "
                          "torch.nn.Module subclass with a forward())")
    if _function(tree, INPUTS_FUNCTION) is None:
        raise _fail(path, f"no function {INPUTS_FUNCTION}() (it returns the list of the "
                          "forward's inputs)")
    names = _module_names(tree)
    sidecar, settings = _sidecar(path)
    for key in SETTINGS:
        if key not in settings and key.upper() in names:
            settings[key] = _literal(path, key.upper(), names[key.upper()])
    dtypes = settings.get("dtypes", ["float32"])
    if (not isinstance(dtypes, list) or not dtypes
            or not all(isinstance(d, str) and d in FLOAT_DTYPES for d in dtypes)):
        raise _fail(path, f"DTYPES must be a non-empty list of some of "
                          f"{', '.join(FLOAT_DTYPES)}, got {dtypes!r}")
    description = settings.get("description", "")
    if not isinstance(description, str):
        raise _fail(path, f"DESCRIPTION must be a string, got {type(description).__name__}")
    shapes = (_input_sets(path, "SHAPES", settings["shapes"], names) if "shapes" in settings
              else [InputSet("default")])
    small = (_input_sets(path, "SMALL_SHAPES", settings["small_shapes"], names)
             if "small_shapes" in settings else shapes)
    return ModelFile(
        path=path,
        source=source,
        forward_params=_forward_params(path, model),
        model_doc=(ast.get_docstring(model) or "").strip(),
        has_candidate=_class(tree, CANDIDATE_CLASS) is not None,
        shapes=shapes,
        small_shapes=small,
        dtypes=list(dtypes),
        tolerances=_tolerances(path, settings.get("atol"), settings.get("rtol"), list(dtypes)),
        description=description.strip(),
        sidecar=sidecar,
    )
