"""Recipes: TOML files that pick components and set their options.

Everything is validated before any work starts. Each problem names the file,
the line, the dotted key and what would be valid. ``include = "base.toml"``
(path relative to the including file) merges a base recipe underneath, so an
ablation is a few lines. A path option may name environment variables,
``path = "${GEAK_TRITONBENCH_DATA}"``, so that one recipe serves machines whose
data lie in different places; an unset one is a problem naming the variable.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from geak_core.api.components import COMPONENT_KINDS, ROUND_KINDS
from geak_core.api.errors import RecipeError, RecipeProblem, suggest
from geak_core.engine.plugins import PluginManager

# ---------------------------------------------------------------------------
# Core sections (component sections add their component's options)
# ---------------------------------------------------------------------------


@dataclass
class RunOptions:
    name: str = "run"
    # Seeds every LLM request (one seed per task, lineage and iteration, derived from this
    # one), so a rerun asks the same questions; the judge's secret seeds stay its own.
    seed: int = 0
    output_dir: str = "runs"
    max_llm_calls: int = 0  # 0: unlimited
    max_tokens: int = 0
    max_cost_usd: float = 0.0
    # tool calls a conversing generator's model may make (``[generator] name = "tools"``), and
    # the seconds those tools may take (judging, profiling, tuning), over the whole run; 0: unlimited
    max_tool_calls: int = 0
    max_tool_seconds: float = 0.0


@dataclass
class AgentOptions:
    iterations: int = 10  # sequential scaling: rounds per lineage
    lineages: int = 1  # parallel scaling: independent lineages per task
    patience: int = 0  # stop a lineage after this many rounds without improvement (0: never)
    target_speedup: float = 0.0  # stop a task once a correct candidate reaches it (0: never)
    concurrency: int = 4  # lineages worked on at once


@dataclass
class SuiteSection:
    name: str = "rocm"
    tasks: list[str] = field(default_factory=list)  # empty: every task
    # only tasks of these categories (Task.category; geak_core.engine.selection); empty: every category
    categories: list[str] = field(default_factory=list)
    limit: int = 0  # at most this many of those tasks, the first ones (0: all; `run --limit`)


@dataclass
class RetrieverSection:
    # Rounds whose prompt gets retrieved examples. A generate or restart round queries by
    # the task's instruction (a restart drops the abandoned code); a reflect round by the
    # failed code it fixes; an optimize round by the lineage's best correct code.
    rounds: list[str] = field(
        default_factory=lambda: ["generate", "restart", "reflect"], metadata={"choices": list(ROUND_KINDS)}
    )


TUNE_WHEN = ("every_correct", "best")


@dataclass
class TunerSection:
    """Core keys of ``[tuner]``, whatever tuner ``name`` chooses: what tuning may spend per
    task (over all its lineages) and which correct candidates it tunes."""

    # variants judged per task at most; once spent, no candidate of the task is tuned
    candidates: int = 16
    # seconds of tuning per task at most; no variant is sent to the judge once they are spent
    seconds: float = 120.0
    # every_correct: each correct candidate a round yields; best: only a round's candidate
    # that became its lineage's best
    when: str = field(default="every_correct", metadata={"choices": list(TUNE_WHEN)})


PROFILE_WHEN = ("every_correct", "best")


@dataclass
class ProfilerSection:
    """Core keys of ``[profiler]``, whatever profiler ``name`` chooses: which correct
    candidates are profiled, what one profile may spend, and when a lineage has reached its
    bound's peak."""

    # every_correct: each correct candidate a round yields; best: only a round's candidate
    # that became its lineage's best
    when: str = field(default="every_correct", metadata={"choices": list(PROFILE_WHEN)})
    # seconds one profile may take at most (the tool's start, the candidate's compile, the
    # profiled calls); a profile cut short is recorded with its reason
    seconds: float = 90.0
    # a lineage stops optimizing once a candidate reaches this fraction of its bound's peak
    # (memory- or compute-bound); 0: never
    stop_at_peak_fraction: float = 0.0
    # show the diagnosis and counters in optimize and reflect prompts (false: profile and
    # store only, for the ablation without profiler feedback)
    in_prompts: bool = True


@dataclass
class HardwareOptions:
    profile: str = "auto"


@dataclass
class KnowledgeOptions:
    packs: list[str] = field(default_factory=list)


@dataclass
class PromptOptions:
    set: str = "default"
    overrides: dict[str, str] = field(default_factory=dict)  # template name -> file path


# section -> (component kind, key naming the component, default component name), for the
# kinds whose section holds the component's options; from the table of component kinds.
COMPONENT_SECTIONS: dict[str, tuple[str, str, str | None]] = {
    k.section: (k.name, k.key, k.default) for k in COMPONENT_KINDS if k.options
}
# Keys of component sections that belong to the core, not to the component's options.
CORE_KEYS_OF_SECTION: dict[str, type] = {"suite": SuiteSection, "retriever": RetrieverSection,
                                         "tuner": TunerSection, "profiler": ProfilerSection}
PLAIN_SECTIONS: dict[str, type] = {
    "run": RunOptions,
    "agent": AgentOptions,
    "hardware": HardwareOptions,
    "knowledge": KnowledgeOptions,
    "prompts": PromptOptions,
}
# Keys that moved: the old place is an error that names the new one.
MOVED_KEYS: dict[str, str] = {
    "agent.max_debug_attempts": "policy.max_debug_attempts",
    "agent.retrieve_with_code": "retriever.rounds (a reflect round queries by the failed code)",
}
TOP_LEVEL_KEYS = {"include"}


@dataclass
class Component:
    """A chosen component and its validated options."""

    kind: str
    name: str
    options: Any


@dataclass
class Recipe:
    path: str
    run: RunOptions
    agent: AgentOptions
    hardware: HardwareOptions
    knowledge: KnowledgeOptions
    prompts: PromptOptions
    components: dict[str, Component]  # section -> component
    data: dict[str, Any]  # the resolved recipe, every default filled
    core_keys: dict[str, Any] = field(default_factory=dict)  # section -> its CORE_KEYS_OF_SECTION instance
    source: _Source = field(default_factory=lambda: _Source())  # where each key was set

    def component(self, section: str) -> Component:
        return self.components[section]

    def problem(self, key: str, message: str, hint: str = "") -> RecipeProblem:
        """A problem with the dotted ``key``, at the file and line that set it (or its section)."""
        file, line = self.source.where(key)
        return RecipeProblem(file, line, key, message, hint)

    @property
    def suite(self) -> SuiteSection:
        return self.core_keys.get("suite") or SuiteSection()

    @property
    def retriever(self) -> RetrieverSection:
        return self.core_keys.get("retriever") or RetrieverSection()

    @property
    def tuner(self) -> TunerSection:
        return self.core_keys.get("tuner") or TunerSection()

    @property
    def profiler(self) -> ProfilerSection:
        return self.core_keys.get("profiler") or ProfilerSection()


# ---------------------------------------------------------------------------
# Locating keys in the source
# ---------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\-\"']+)\s*=")


def dotted(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A recipe's (or any nested table's) values by dotted key: ``{"agent.iterations": 3}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(dotted(value, name + "."))
        else:
            flat[name] = value
    return flat


def locate_keys(text: str) -> dict[str, int]:
    """Map dotted keys (and table names) to the 1-based line that defines them."""
    lines: dict[str, int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = ".".join(p.strip().strip("\"'") for p in header.group(1).split("."))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            name = ".".join(p.strip().strip("\"'") for p in key.group(1).split("."))
            lines.setdefault(f"{table}.{name}" if table else name, number)
    return lines


@dataclass
class _Source:
    """Where each key of a (possibly merged) recipe came from."""

    origin: dict[str, tuple[str, int | None]] = field(default_factory=dict)

    def where(self, key: str) -> tuple[str, int | None]:
        probe = key
        while probe:
            if probe in self.origin:
                return self.origin[probe]
            probe = probe.rpartition(".")[0]
        return self.origin.get("", ("<recipe>", None))


def _load_with_includes(path: Path, source: _Source, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    path = path.resolve()
    if path in seen:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise RecipeError([RecipeProblem(str(path), None, "include", f"include cycle: {chain}")])
    try:
        text = path.read_text()
    except OSError as exc:
        raise RecipeError([RecipeProblem(str(path), None, "", f"cannot read recipe: {exc.strerror}")]) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:
            match = re.search(r"line (\d+)", str(exc))
            line = int(match.group(1)) if match else None
        raise RecipeError([RecipeProblem(str(path), line, "", f"invalid TOML: {exc}")]) from exc
    lines = locate_keys(text)
    base: dict[str, Any] = {}
    include = data.pop("include", None)
    if include is not None:
        if not isinstance(include, str):
            raise RecipeError(
                [RecipeProblem(str(path), lines.get("include"), "include", "must be a path string")]
            )
        base_path = (path.parent / include).resolve()
        if not base_path.exists():
            raise RecipeError(
                [RecipeProblem(str(path), lines.get("include"), "include", f"no such file: {base_path}")]
            )
        base = _load_with_includes(base_path, source, (*seen, path))
    source.origin.setdefault("", (str(path), None))
    for key, line in lines.items():
        source.origin[key] = (str(path), line)
    return _merge(base, data)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


# ---------------------------------------------------------------------------
# Validation against dataclass schemas
# ---------------------------------------------------------------------------


def type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(tp))
    if origin in (list, tuple):
        args = get_args(tp)
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return "table"
    if tp is type(None):
        return "none"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(tp, getattr(tp, "__name__", str(tp)))


def _check_type(value: Any, tp: Any) -> tuple[bool, Any]:
    """(ok, coerced value)."""
    if tp is Any:
        return True, value
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        for arg in get_args(tp):
            ok, coerced = _check_type(value, arg)
            if ok:
                return True, coerced
        return False, value
    if origin is Literal:
        return value in get_args(tp), value
    if tp is type(None):
        return value is None, value
    if origin in (list, tuple):
        if not isinstance(value, list):
            return False, value
        (inner,) = get_args(tp)[:1] or (Any,)
        out = []
        for item in value:
            ok, coerced = _check_type(item, inner)
            if not ok:
                return False, value
            out.append(coerced)
        return True, out if origin is list else tuple(out)
    if origin is dict:
        if not isinstance(value, dict):
            return False, value
        args = get_args(tp)
        if len(args) == 2:
            for item in value.values():
                if not _check_type(item, args[1])[0]:
                    return False, value
        return True, dict(value)
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, float(value)
        return False, value
    if tp is str:
        return isinstance(value, str), value
    if isinstance(tp, type):
        return isinstance(value, tp), value
    return True, value


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def validate_options(
    schema: type | None,
    values: Mapping[str, Any],
    prefix: str,
    source: _Source,
    problems: list[RecipeProblem],
    ignore: tuple[str, ...] = (),
    check_env: bool = True,
) -> Any:
    """Build an instance of ``schema`` from ``values``, recording every problem."""

    def problem(key: str, message: str, hint: str = "") -> None:
        file, line = source.where(key)
        problems.append(RecipeProblem(file, line, key, message, hint))

    if schema is None:
        extra = [k for k in values if k not in ignore]
        for key in extra:  # the section's own keys (ignored here) may be what was meant
            close = difflib.get_close_matches(key, ignore, n=1, cutoff=0.6)
            problem(f"{prefix}.{key}", "unknown key: this component takes no options",
                    f"did you mean {close[0]!r}?" if close else "")
        return None
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema) if f.init}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key in ignore:
            continue
        if key not in fields:
            moved = MOVED_KEYS.get(f"{prefix}.{key}")
            problem(f"{prefix}.{key}", "unknown key" + (" (it has moved)" if moved else ""),
                    f"set {moved} instead" if moved else suggest(key, [*fields, *ignore]))
            continue
        tp = hints.get(key, Any)
        ok, coerced = _check_type(value, tp)
        if not ok:
            problem(f"{prefix}.{key}", f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")
            continue
        choices = fields[key].metadata.get("choices")
        wrong = [v for v in coerced if v not in choices] if choices and isinstance(coerced, list) else (
            [coerced] if choices and coerced not in choices else [])
        if wrong:
            problem(f"{prefix}.{key}", f"invalid value {wrong[0]!r}", "valid: " + ", ".join(map(repr, choices)))
            continue
        if fields[key].metadata.get("path") and isinstance(coerced, str) and coerced:
            about = fields[key].metadata.get("help")  # what the path names, for the hints
            coerced, unset = expand_env(coerced)
            if unset:
                names = ", ".join(unset)
                problem(f"{prefix}.{key}",
                        f"environment variable{'s' if len(unset) > 1 else ''} {names} "
                        f"{'are' if len(unset) > 1 else 'is'} not set (the path is {value!r})",
                        "; ".join(f"export {name}=..." for name in unset)
                        + (f"; {key}: {about}" if about else ""))
                continue
            coerced = _resolve_path(coerced, source.where(f"{prefix}.{key}")[0])
            if not os.path.exists(os.path.expanduser(coerced)):  # every path option names an input
                problem(f"{prefix}.{key}", f"no such file or folder: {coerced}",
                        "a relative path is relative to the recipe file"
                        + (f"; {key}: {about}" if about else ""))
                continue
        kwargs[key] = coerced
    missing = False
    for name, f in fields.items():
        if name not in kwargs and _field_default(f) is dataclasses.MISSING:
            missing = True
            if not any(p.key == f"{prefix}.{name}" for p in problems):
                problem(f"{prefix}.{name}", f"missing required key ({type_name(hints.get(name, Any))})")
    if missing:
        return None
    try:
        instance = schema(**kwargs)
    except Exception as exc:  # __post_init__ validation of the component
        problem(prefix, f"invalid options: {exc}")
        return None
    if check_env:
        for name, var, by_default in env_requirements(instance):
            if not os.environ.get(var):
                problem(
                    f"{prefix}.{name}",
                    f"environment variable {var} is not set"
                    + (" (this component needs it by default)" if by_default else ""),
                    f"export {var}=... or name another variable in {prefix}.{name}",
                )
    return instance


def env_requirements(options: Any, schema: type | None = None) -> list[tuple[str, str, bool]]:
    """The environment variables ``options`` (an instance of ``schema``, its class unless
    given) need set, as (key, variable, by default): what its ``required_env()`` names (a
    default the component falls back to, by_default True), then the variable each ``env`` key
    names. ``recipe check`` requires these to be set and ``doctor`` reports them (through
    ``default_env_requirements``), so the two say the same."""
    schema = schema or type(options)
    required = getattr(schema, "required_env", None)
    pairs = [(name, var, True) for name, var in (required(options) if callable(required) else [])]
    for f in dataclasses.fields(schema):
        if f.init and f.metadata.get("env"):
            var = getattr(options, f.name, None)
            if isinstance(var, str) and var:
                pairs.append((f.name, var, False))
    return pairs


def default_env_requirements(schema: type | None) -> list[tuple[str, str, bool]] | None:
    """``env_requirements`` of a component whose options are all left at their defaults (its
    required keys aside): what a recipe that sets none of them needs. None when that depends
    on a required key (its ``required_env()`` reads one)."""
    if schema is None:
        return []
    defaults = {f.name: value for f in dataclasses.fields(schema)
                if f.init and (value := _field_default(f)) is not dataclasses.MISSING}
    try:  # the defaults without the schema's own checks, which its required keys would fail
        return env_requirements(types.SimpleNamespace(**defaults), schema)
    except AttributeError:
        return None


_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str) -> tuple[str, list[str]]:
    """``value`` with each ``${NAME}`` replaced by the environment variable NAME, and the
    names that are unset or empty (left in place, in order, once each)."""
    unset: list[str] = []

    def replace(match: re.Match[str]) -> str:
        found = os.environ.get(match[1])
        if found:
            return found
        if match[1] not in unset:
            unset.append(match[1])
        return match[0]

    return _ENV_REFERENCE.sub(replace, value), unset


def _resolve_path(value: str, recipe_file: str) -> str:
    """Paths in recipes are relative to the file that sets them."""
    path = Path(os.path.expanduser(value))
    if path.is_absolute() or recipe_file.startswith("<"):
        return str(path)
    return str((Path(recipe_file).parent / path).resolve())


def options_to_dict(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.init}


OVERRIDE = "--set"  # where a key set on the command line comes from, in messages

Override = Union[str, tuple[str, str]]  # "KEY=VALUE", or ("KEY=VALUE", what the user typed)


def key_value(pair: str) -> tuple[str, Any] | None:
    """A command line's ``KEY=VALUE`` as (KEY stripped, VALUE parsed as TOML; a bare word that is
    not TOML is the string, stripped); None without ``=`` or KEY. The one reading of such pairs:
    ``--set`` here, ``--option`` of ``geak-core eval``, the benches' evaluator options."""
    key, sep, text = pair.partition("=")
    key = key.strip()
    if not sep or not key:
        return None
    try:
        return key, tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return key, text.strip()


def apply_overrides(data: dict[str, Any], overrides: Sequence[Override], source: _Source) -> None:
    """``KEY=VALUE`` pairs set into the recipe's data (``agent.iterations=5``,
    ``suite.tasks=["softmax"]``), VALUE in TOML syntax (a bare word is a string); each key is
    then validated like the file's, its problems located at what the user typed: ``--set
    KEY=VALUE``, or the label an override comes with (``("suite.limit=-1", "--limit -1")``).
    Tables a pair creates are located there too (``--set nosuch.x=1``: an unknown section)."""
    problems = []
    for item in overrides:
        pair, label = item if isinstance(item, tuple) else (item, f"{OVERRIDE} {item}")
        parsed = key_value(pair)
        parts = parsed[0].split(".") if parsed else []
        if parsed is None or any(not part for part in parts):
            problems.append(RecipeProblem(label, None, "", "expected KEY=VALUE, KEY dotted "
                                                           "(agent.iterations=5)"))
            continue
        key, value = parsed
        table = data
        for depth, part in enumerate(parts[:-1]):
            prefix = ".".join(parts[:depth + 1])
            if part not in table:
                source.origin[prefix] = (label, None)
            inner = table.setdefault(part, {})
            if not isinstance(inner, dict):
                problems.append(RecipeProblem(label, None, prefix, "is not a table"))
                break
            table = inner
        else:
            table[parts[-1]] = value
            source.origin[key] = (label, None)
    if problems:
        raise RecipeError(problems)


def load_recipe(
    path: str | os.PathLike[str],
    plugins: PluginManager,
    *,
    check_env: bool = True,
    overrides: Sequence[Override] = (),
    sections: Mapping[str, tuple[dict[str, Any], str]] | None = None,
) -> Recipe:
    """Load, merge includes, apply ``overrides`` (``KEY=VALUE``, see :func:`apply_overrides`),
    validate and resolve a recipe; raise RecipeError with every problem. ``sections`` replaces
    whole tables of the file, each with the origin its problems are located at (``geak-core
    optimize`` sets ``[suite]`` so)."""
    source = _Source()
    data = _load_with_includes(Path(path), source)
    for name, (table, origin) in (sections or {}).items():
        data[name] = dict(table)
        for key in [k for k in source.origin if k == name or k.startswith(f"{name}.")]:
            del source.origin[key]
        source.origin[name] = (origin, None)
    apply_overrides(data, overrides, source)
    problems: list[RecipeProblem] = []

    def problem(key: str, message: str, hint: str = "") -> None:
        file, line = source.where(key)
        problems.append(RecipeProblem(file, line, key, message, hint))

    known = set(PLAIN_SECTIONS) | set(COMPONENT_SECTIONS) | TOP_LEVEL_KEYS
    for key in data:
        if key not in known:
            problem(key, "unknown section", suggest(key, known))
        elif not isinstance(data[key], dict):
            problem(key, f"must be a table ([{key}])")

    def table(name: str) -> dict[str, Any]:
        value = data.get(name, {})
        return value if isinstance(value, dict) else {}

    plain = {
        name: validate_options(schema, table(name), name, source, problems)
        for name, schema in PLAIN_SECTIONS.items()
    }

    resolved: dict[str, Any] = {name: options_to_dict(v) for name, v in plain.items()}
    components: dict[str, Component] = {}
    core_sections: dict[str, Any] = {}
    for section, (kind, name_key, default) in COMPONENT_SECTIONS.items():
        values = dict(table(section))
        core_schema = CORE_KEYS_OF_SECTION.get(section)
        core_keys: tuple[str, ...] = (name_key,)
        if core_schema is not None:
            core_keys = tuple(dict.fromkeys([name_key, *(f.name for f in dataclasses.fields(core_schema))]))
            core_values = {k: v for k, v in values.items() if k in core_keys}
            own = {f.name for f in dataclasses.fields(core_schema)}
            parsed = validate_options(core_schema, core_values, section, source, problems,
                                      ignore=(name_key,) if name_key not in own else ())
            if parsed is not None:
                core_sections[section] = parsed
        name = values.get(name_key, default)
        if name is None:
            problem(f"{section}.{name_key}", "missing required key: which component to use",
                    "valid: " + ", ".join(sorted(plugins.components(kind))) or "none installed")
            continue
        if not isinstance(name, str):
            problem(f"{section}.{name_key}", f"expected string, got {type(name).__name__}")
            continue
        registry = plugins.components(kind)
        if name not in registry:
            problem(f"{section}.{name_key}", f"unknown {kind.replace('_', ' ')} {name!r}", suggest(name, registry))
            continue
        spec = registry[name]
        options = validate_options(
            spec.options, values, section, source, problems, ignore=core_keys, check_env=check_env
        )
        components[section] = Component(kind, name, options)
        core_parsed = core_sections.get(section)
        resolved[section] = {name_key: name, **(
            {k: getattr(core_parsed, k) for k in core_keys if k != name_key} if core_parsed is not None else {}
        ), **options_to_dict(options)}

    for kind in COMPONENT_KINDS:  # components named in core sections ([hardware], [knowledge], [prompts])
        if kind.options or plain.get(kind.section) is None:
            continue
        value = getattr(plain[kind.section], kind.key)
        registry = plugins.components(kind.name)
        for i, chosen in enumerate(value if kind.many else [value]):
            if chosen not in registry and chosen not in kind.extra:
                key = f"{kind.section}.{kind.key}" + (f"[{i}]" if kind.many else "")
                problem(key, f"unknown {kind.name.replace('_', ' ')} {chosen!r}",
                        suggest(chosen, [*registry, *kind.extra]))
    prompts = plain["prompts"]
    if prompts is not None:
        base_dir = Path(path).resolve().parent
        for name, file in prompts.overrides.items():
            if not (base_dir / file).exists():
                problem(f"prompts.overrides.{name}", f"no such template file: {base_dir / file}")
    agent = plain["agent"]
    if agent is not None:
        for key in ("iterations", "lineages", "concurrency"):
            if getattr(agent, key) < 1:
                problem(f"agent.{key}", f"must be at least 1, got {getattr(agent, key)}")
    profiler = core_sections.get("profiler")
    if profiler is not None:
        if profiler.seconds <= 0:
            problem("profiler.seconds", f"must be more than 0, got {profiler.seconds:g}",
                    "seconds one profile may take, e.g. 90")
        if not 0.0 <= profiler.stop_at_peak_fraction <= 1.0:
            problem("profiler.stop_at_peak_fraction",
                    f"must be between 0 and 1, got {profiler.stop_at_peak_fraction:g}",
                    "a fraction of the bound's peak, e.g. 0.9; 0 never stops")
    tuner = core_sections.get("tuner")
    if tuner is not None:
        if tuner.candidates < 1:
            problem("tuner.candidates", f"must be at least 1, got {tuner.candidates}",
                    'name = "none" turns tuning off')
        if tuner.seconds <= 0:
            problem("tuner.seconds", f"must be more than 0, got {tuner.seconds:g}",
                    'name = "none" turns tuning off')

    if problems:
        raise RecipeError(problems)
    assert all(v is not None for v in plain.values())
    return Recipe(
        path=str(Path(path).resolve()),
        run=plain["run"],
        agent=plain["agent"],
        hardware=plain["hardware"],
        knowledge=plain["knowledge"],
        prompts=plain["prompts"],
        components=components,
        data=resolved,
        core_keys=core_sections,
        source=source,
    )


# ---------------------------------------------------------------------------
# Writing TOML (the resolved recipe)
# ---------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def dump_toml(data: Mapping[str, Mapping[str, Any]]) -> str:
    """TOML text for a two-level mapping of sections (``None`` values are left out)."""
    out: list[str] = []
    for section, values in data.items():
        out.append(f"[{section}]")
        for key, value in values.items():
            if value is None:
                continue
            out.append(f"{_toml_key(key)} = {_toml_value(value)}")
        out.append("")
    return "\n".join(out)
