"""The judge's functions as tools: what a coding agent (over MCP: ``geak-core mcp``) or a
model given tools asks of geak-core, each a typed method with a JSON schema of its arguments
and a JSON-able answer.

=============  ===================================  =========================================
tool           arguments                            answer
=============  ===================================  =========================================
list_tasks     suite, options? (categories, limit)  the suite's tasks, one row each
show_task      suite, task                          what a model is shown of the task
judge          suite, task, code                    the verdict record ``geak-core eval``
                                                    writes for the same file
profile        suite, task, code, profiler?         the verdict and the profile record
                                                    (only where a profiler is usable)
tune           suite, task, code                    the record ``geak-core tune`` writes
                                                    (only where a tuner is installed)
runs_list      (none)                               one row per stored run
runs_show      run                                  ``geak-core runs show --json``'s record
=============  ===================================  =========================================

Why here, in the engine and not beside the MCP server: a generator that gives a model these
tools through its backend's own tool calling needs the same functions, and the MCP server is
only one transport of them; neither needs the other, and this module needs neither.
``ToolSet`` is the functions over a judge; ``JudgeTools`` is the MCP server's set (a judge
of its own, files under an output folder, stored runs); an agent's conversing round binds a
set to its task and its run (``engine.tool_round``: the judged code a candidate of the run,
the verdict in its store).

One validation path: ``ToolSet.call(name, arguments)`` checks the arguments against the
tool's schema (``check_arguments``: types, required and unknown arguments, lengths), then the
tool checks what only it can (the suite served, the task in it, the run stored); either
raises ``ToolError`` with a message naming the argument, what it got and what would be
valid. A transport turns that into its error result; nothing of it is a crash.

Every judgement goes through the one evaluator the caller built (as ``geak-core eval`` builds
it, or from a recipe's ``[evaluator]`` and ``[executor]``), so its sandbox, confinement,
budgets and anti-cheat checks are the command's; ``profile`` and ``tune`` take the same
paths as ``geak-core profile`` and ``tune`` (``engine.profiling.profile_candidate``,
``engine.tuning.tune_candidate``). ``JudgeTools`` writes only under ``out_dir``: each judged
code as ``candidates/<suite>/<task>__<hash>.py`` (named so that ``geak-core eval`` reads it
back for its task, and that file's path is the candidate's id, as ``eval`` names a file's),
and one record a line in ``judged.jsonl``, ``profiled.jsonl`` and ``tuned.jsonl``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geak_core.api.components import EvalJob, HardwareProfile, ProfilerBase, TuneBudget
from geak_core.api.errors import InputError, suggest
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import Task
from geak_core.engine.plugins import PluginManager
from geak_core.engine.profiling import PREFERRED_PROFILERS, profile_candidate
from geak_core.engine.records import RecordFile, result_record
from geak_core.engine.selection import in_categories
from geak_core.engine.store import atomic_write, list_runs, resolve_run, run_details
from geak_core.engine.tuning import tune_candidate

if TYPE_CHECKING:
    from geak_core.engine.recipe import Recipe

# A candidate's source, at most (a kernel file is a few kilobytes; this bounds what one call
# can make the judge read and the out folder hold).
MAX_CODE_CHARS = 200_000

Progress = Callable[[str], None]


class ToolError(InputError):
    """A tool call's input is wrong: the message names the argument, what it got and what
    would be valid."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model or an MCP client sees it: its name, what it does, the JSON schema of
    its arguments, and whether it takes long (judging: seconds to minutes), so that a
    transport reports its progress."""

    name: str
    description: str
    input_schema: dict[str, Any]
    long: bool = False


def _string(description: str, **limits: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **limits}


SUITE = _string("A suite this server serves, e.g. rocm (list them: the geak://suites resource).",
                minLength=1)
TASK = _string("A task id of the suite, as list_tasks gives it.", minLength=1)
CODE = _string("The candidate: the whole Python source of the kernel module (Triton kernels and "
               "the entry points the task names), as a file judged by `geak-core eval` holds it.",
               minLength=1, maxLength=MAX_CODE_CHARS)


def _arguments(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("list_tasks", "The tasks of a suite: id, difficulty, category, what each needs (hardware, "
             "Triton features) and the first line of its instruction.",
             _arguments({"suite": SUITE, "options": {
                 "type": "object", "description": "Which tasks: those of these categories, the first "
                                                  "`limit` of them.",
                 "properties": {
                     "categories": {"type": "array", "items": {"type": "string"},
                                    "description": "Only tasks of these categories (empty: all)."},
                     "limit": {"type": "integer", "minimum": 0, "description": "At most this many (0: all)."},
                 },
                 "additionalProperties": False}}, ["suite"])),
    ToolSpec("show_task", "What a model is shown of a task: its instruction, the entry points a candidate "
             "must define (name, kind, signature), tolerances, the shapes its cases run, what it requires; "
             "never its reference or oracle. unmet_requirements says why the judge here cannot run it.",
             _arguments({"suite": SUITE, "task": TASK}, ["suite", "task"])),
    ToolSpec("judge", "Judge a candidate kernel in the sandbox: static and anti-cheat checks, correctness "
             "on every case against the reference (hidden seeds), and on a GPU its speed against the "
             "baseline. Returns the verdict record `geak-core eval` writes for the same file: correct, "
             "failed_stage, reason, speedups, per-shape figures, flags.",
             _arguments({"suite": SUITE, "task": TASK, "code": CODE}, ["suite", "task", "code"]), long=True),
    ToolSpec("profile", "Judge a candidate and, if it is correct, profile it in the judge's sandbox: its "
             "bottleneck (memory-, compute-, latency- or launch-bound), the evidence, each kernel's counters. "
             "A profile never changes the verdict.",
             _arguments({"suite": SUITE, "task": TASK, "code": CODE, "profiler": _string(
                 "A profiler usable here (default: the first of ncu, proton, rocprof that is).")},
                 ["suite", "task", "code"]), long=True),
    ToolSpec("tune", "Judge a candidate and, if it is correct and its speed was measured (a GPU), tune its "
             "launch configuration (block sizes, warps, stages): variants judged by the same judge, the "
             "fastest correct one kept if it beats the candidate. Returns `geak-core tune`'s record.",
             _arguments({"suite": SUITE, "task": TASK, "code": CODE}, ["suite", "task", "code"]), long=True),
    ToolSpec("runs_list", "The stored runs: id, name, status, LLM calls, candidates, evaluations.",
             _arguments({}, [])),
    ToolSpec("runs_show", "One stored run: status, why it failed, counts, LLM usage and its summary "
             "(`geak-core runs show --json`).",
             _arguments({"run": _string("A run id, or a unique prefix of one, as runs_list gives it.",
                                        minLength=1)}, ["run"])),
)
TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


# -- arguments ---------------------------------------------------------------------------


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _check(schema: Mapping[str, Any], value: object, path: str) -> None:
    where = f"argument {path!r}"
    expected, actual = schema["type"], _json_type(value)
    if actual != expected and not (expected == "number" and actual == "integer"):
        raise ToolError(f"{where}: expected {_a(expected)}, got {_a(actual)}")
    if expected == "string":
        assert isinstance(value, str)
        if len(value) < schema.get("minLength", 0):
            raise ToolError(f"{where}: must not be empty")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ToolError(f"{where}: {len(value)} characters, more than the {schema['maxLength']} allowed")
    elif expected == "integer":
        assert isinstance(value, int)
        if "minimum" in schema and value < schema["minimum"]:
            raise ToolError(f"{where}: must be at least {schema['minimum']}, got {value}")
    elif expected == "array":
        assert isinstance(value, (list, tuple))
        for index, item in enumerate(value):
            _check(schema["items"], item, f"{path}[{index}]")
    elif expected == "object":
        assert isinstance(value, dict)
        properties = schema.get("properties", {})
        for key in value:
            if key not in properties:
                raise ToolError(f"{where}: unknown key {key!r} ({suggest(str(key), properties)})")
        for key in schema.get("required", []):
            if key not in value:
                raise ToolError(f"{where}: missing key {key!r}")
        for key, item in value.items():
            _check(properties[key], item, f"{path}.{key}")


def check_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """``arguments`` (None: none) checked against ``spec``'s schema: a JSON object with every
    required argument, no unknown one, each of its type and within its limits; raises
    ``ToolError`` naming the first argument that is not."""
    arguments = {} if arguments is None else arguments
    if not isinstance(arguments, dict):
        raise ToolError(f"the arguments must be a JSON object, got {_a(_json_type(arguments))}")
    properties = spec.input_schema["properties"]
    for key in arguments:
        if key not in properties:
            raise ToolError(f"unknown argument {key!r} ({suggest(str(key), properties)})")
    for key in spec.input_schema["required"]:
        if key not in arguments:
            raise ToolError(f"missing argument {key!r}: {properties[key]['description']}")
    for key, value in arguments.items():
        _check(properties[key], value, key)
    return dict(arguments)


def statement_text(task: Task) -> str:
    """A task as a model is shown it, in words: its instruction, the entry points a candidate
    defines, the shapes its cases run, tolerances and needs (``geak-core task show``)."""
    view = task.prompt_view()
    lines = [f"{task.key}  (difficulty {task.difficulty}, category {task.category})", "", task.instruction, "",
             "Entry points:"]
    lines += [f"  [{e['kind']}] {e['signature']}" for e in view["entry_points"]]
    if view["shapes"]:
        lines.append(f"\nShapes: {view['shapes']}")
    if view["tolerances"]:
        lines.append("Tolerances (atol, rtol): " + ", ".join(f"{k}: {v}" for k, v in view["tolerances"].items()))
    if view["requires"]:
        lines.append("Requires: " + ", ".join(view["requires"]))
    if view["case_requires"]:
        lines.append("Some cases require: " + ", ".join(view["case_requires"]))
    return "\n".join(lines) + "\n"


# -- what the tools serve ----------------------------------------------------------------


class Suites:
    """The suites the tools serve, each loaded on its first use and kept: ``sources`` gives
    each served suite's name and the function that gives its tasks (a recipe's, as its
    ``[suite]`` chooses them; a suite built with a command's ``--suite-option``)."""

    def __init__(self, sources: Mapping[str, Callable[[], Iterable[Task]]],
                 descriptions: Mapping[str, str] | None = None) -> None:
        self._sources = dict(sources)
        self._descriptions = dict(descriptions or {})
        self._tasks: dict[str, dict[str, Task]] = {}
        self._lock = threading.Lock()

    @classmethod
    def registered(cls, plugins: PluginManager) -> Suites:
        """Every registered suite, with its default options."""
        specs = plugins.components("suite")
        return cls({name: (lambda name=name: plugins.build("suite", name).tasks()) for name in specs},
                   descriptions={name: spec.description for name, spec in specs.items()})

    def names(self) -> list[str]:
        return sorted(self._sources)

    def description(self, name: str) -> str:
        return self._descriptions.get(name, "")

    def tasks(self, name: str) -> dict[str, Task]:
        """The served tasks of suite ``name`` by id; ``ToolError`` for a suite not served, or
        one that cannot be loaded here (its data missing, say)."""
        if name not in self._sources:
            raise ToolError(f"argument 'suite': this server serves no suite {name!r} "
                            f"({suggest(name, self._sources)})")
        with self._lock:
            if name not in self._tasks:
                try:
                    self._tasks[name] = {t.id: t for t in self._sources[name]()}
                except Exception as exc:  # a suite without its data, a broken plugin: said, not raised
                    raise ToolError(f"argument 'suite': suite {name!r} cannot be loaded here: {exc}") from exc
            return self._tasks[name]

    def task(self, suite: str, task_id: str) -> Task:
        tasks = self.tasks(suite)
        if task_id not in tasks:
            raise ToolError(f"argument 'task': suite {suite!r} has no task {task_id!r} here "
                            f"({suggest(task_id, tasks)})")
        return tasks[task_id]


@dataclass
class Tuning:
    """The installed tuner (its hardware profile set) and what one ``tune`` call may spend."""

    tuner: Any
    budget: TuneBudget


@dataclass
class Profiling:
    """The profilers usable here, the default first, and the seconds one profile may take."""

    profilers: dict[str, ProfilerBase]
    seconds: float


def installed_tuning(plugins: PluginManager, hardware: HardwareProfile | None, budget: TuneBudget,
                     name: str = "grid", options: Any = None) -> Tuning | None:
    """The tuner ``name`` (``geak-core tune``'s default: grid) with ``options``, given
    ``hardware``'s limits; None where it is not installed or ``name`` is ``none``."""
    if name == "none" or name not in plugins.components("tuner"):
        return None
    tuner = plugins.build("tuner", name, options)
    tuner.set_hardware(hardware)
    return Tuning(tuner, budget)


def usable_profiling(plugins: PluginManager, hardware: HardwareProfile | None, seconds: float,
                     chosen: tuple[str, Any] | None = None) -> Profiling | None:
    """The registered profilers usable here (built, nothing in their ``unusable()``, and made
    for the GPU's vendor), ``ncu``, ``proton`` and ``rocprof`` first; only ``chosen`` (name,
    options: a recipe's ``[profiler]``) when given. None where none is."""
    registry = plugins.components("profiler")
    if chosen is not None:
        wanted: list[tuple[str, Any]] = [chosen]
    else:
        order = [n for n in PREFERRED_PROFILERS if n in registry] + sorted(set(registry) - set(PREFERRED_PROFILERS))
        wanted = [(n, None) for n in order if n != "none"]
    usable: dict[str, ProfilerBase] = {}
    for name, options in wanted:
        if name == "none" or name not in registry:
            continue
        try:
            profiler = plugins.build("profiler", name, options)
        except Exception:  # a profiler that cannot even be built is not usable
            continue
        if profiler.unusable() or (hardware is not None and hardware.vendor not in profiler.vendors):
            continue
        profiler.set_hardware(hardware)
        usable[name] = profiler
    return Profiling(usable, seconds) if usable else None


def recipe_tooling(recipe: Recipe, components: Mapping[str, Any], hardware: HardwareProfile | None,
                   plugins: PluginManager) -> tuple[Tuning | None, Profiling | None]:
    """The tuner and profilers the tools of a run of ``recipe`` use: its ``[tuner]`` and
    ``[profiler]`` (``components``: built by ``agent.prepare``) where it names them, else
    those the commands take by default where installed and usable; with the recipe's budgets
    (``candidates`` and ``seconds`` per ``tune`` call, ``seconds`` per profile)."""
    budget = TuneBudget(recipe.tuner.candidates, recipe.tuner.seconds)
    tuner_name = recipe.components["tuner"].name
    tuning = (Tuning(components["tuner"], budget) if tuner_name != "none"
              else installed_tuning(plugins, hardware, budget))
    profiler_name = recipe.components["profiler"].name
    profiling = (Profiling({profiler_name: components["profiler"]}, recipe.profiler.seconds)
                 if profiler_name != "none" else usable_profiling(plugins, hardware, recipe.profiler.seconds))
    return tuning, profiling


# -- the tools ---------------------------------------------------------------------------


def bound_spec(spec: ToolSpec, bound: Iterable[str]) -> ToolSpec:
    """``spec`` without the arguments ``bound`` names (a tool set for one task fixes
    ``suite`` and ``task``, so that a model is asked only for what it decides)."""
    properties = spec.input_schema["properties"]
    fixed = set(bound) & set(properties)
    if not fixed:
        return spec
    schema = {**spec.input_schema, "properties": {k: v for k, v in properties.items() if k not in fixed},
              "required": [k for k in spec.input_schema["required"] if k not in fixed]}
    return dataclasses.replace(spec, input_schema=schema)


class ToolSet:
    """The judge's functions as tools over one judge: ``evaluator`` (built by the caller, used
    by every call), the ``suites`` served, and the tuner and profilers when there are
    (``tuning``, ``profiling``; None: that tool is not offered). ``bound`` fixes arguments
    for every call (``{"suite": ..., "task": ...}``: a tool set for one task, whose tools
    neither ask for them nor accept them); ``offered`` keeps those tools only (None: every one
    that can run). Calls may come from several threads.

    Where a judged code becomes a candidate (``draft``) and what a judgement leaves behind
    (``verdict``, ``keep``) are the caller's: ``JudgeTools`` writes files under its output
    folder; an agent's conversing round stores them in the run (``engine.tool_round``)."""

    def __init__(self, evaluator: Any, suites: Suites, *, hardware: HardwareProfile | None = None,
                 tuning: Tuning | None = None, profiling: Profiling | None = None,
                 bound: Mapping[str, str] | None = None, offered: Iterable[str] | None = None) -> None:
        self.evaluator = evaluator
        self.suites = suites
        self.hardware = hardware
        self.tuning = tuning
        self.profiling = profiling
        self.bound = dict(bound or {})
        functions = self.functions()
        wanted = set(functions) if offered is None else set(offered)
        self._functions = {name: function for name, function in functions.items() if name in wanted}

    def functions(self) -> dict[str, Callable[..., dict[str, Any]]]:
        """The tools this set can offer, by name."""
        found: dict[str, Callable[..., dict[str, Any]]] = {
            "list_tasks": self.list_tasks, "show_task": self.show_task, "judge": self.judge}
        if self.profiling is not None:
            found["profile"] = self.profile
        if self.tuning is not None:
            found["tune"] = self.tune
        return found

    def specs(self) -> list[ToolSpec]:
        """The tools offered here, in ``TOOLS``' order, without the bound arguments."""
        return [bound_spec(spec, self.bound) for spec in TOOLS if spec.name in self._functions]

    def call(self, name: str, arguments: object, progress: Progress | None = None) -> dict[str, Any]:
        """Tool ``name`` called with ``arguments`` (checked first, then the bound ones added);
        ``progress`` hears the steps of a long one. ``ToolError`` for a bad call, whatever was
        wrong with it."""
        if name not in self._functions:
            raise ToolError(f"no tool {name!r} here ({suggest(name, self._functions)})")
        spec = TOOL_SPECS[name]
        checked = check_arguments(bound_spec(spec, self.bound), arguments)
        checked.update({k: v for k, v in self.bound.items() if k in spec.input_schema["properties"]})
        if spec.long:
            checked["progress"] = progress
        return self._functions[name](**checked)

    # -- what a caller decides -----------------------------------------------------------

    def draft(self, task: Task, code: str) -> Candidate:
        """The candidate of ``code`` for ``task``: its id names it where the caller keeps it."""
        raise NotImplementedError(f"{type(self).__name__} does not say where a judged code is kept")

    def verdict(self, task: Task, candidate: Candidate, progress: Progress | None) -> EvalResult:
        """``candidate`` judged by the evaluator."""
        if progress is not None:
            progress(f"judging {task.key}")
        ((_, verdict),) = list(self.evaluator.evaluate_many([EvalJob(task, candidate)]))
        return verdict

    def keep(self, journal: str, record: dict[str, Any]) -> None:
        """A call's record, for the caller's journal ``journal`` (``judged.jsonl``,
        ``profiled.jsonl``, ``tuned.jsonl``); kept nowhere by default."""
        return None

    # -- tasks ---------------------------------------------------------------------------

    def list_tasks(self, suite: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The served tasks of ``suite`` (``options``: ``categories``, ``limit``), a row each."""
        options = options or {}
        tasks = list(self.suites.tasks(suite).values())
        categories = list(options.get("categories") or [])
        known = sorted({t.category for t in tasks if t.category})
        for category in categories:
            if category not in known:
                raise ToolError(f"argument 'options.categories': suite {suite!r} has no category "
                                f"{category!r} ({suggest(category, known)})")
        tasks = in_categories(tasks, categories)
        limit = int(options.get("limit") or 0)
        total = len(tasks)
        tasks = tasks[:limit] if limit > 0 else tasks
        return {"suite": suite, "count": total, "tasks": [{
            "id": t.id, "difficulty": t.difficulty, "category": t.category,
            "requires": [r.name for r in t.requires], "case_requires": [r.name for r in t.case_requires],
            "summary": t.instruction.strip().splitlines()[0][:200] if t.instruction.strip() else "",
        } for t in tasks]}

    def show_task(self, suite: str, task: str) -> dict[str, Any]:
        """``geak-core task show --json``'s record of the task (what a prompt may show, never
        the reference), the same in words (``statement``), and why the judge here cannot run
        it (empty: it can)."""
        found = self.suites.task(suite, task)
        return {"key": found.key, **found.prompt_view(), "statement": statement_text(found),
                "unmet_requirements": list(self.evaluator.unmet_requirements(found))}

    # -- judging -------------------------------------------------------------------------

    def judge(self, suite: str, task: str, code: str, progress: Progress | None = None) -> dict[str, Any]:
        """The verdict record of ``code`` for the task, as ``geak-core eval`` writes it for
        the candidate's file; also kept in ``judged.jsonl``."""
        found = self.suites.task(suite, task)
        candidate = self.draft(found, code)
        record = result_record(found, self.verdict(found, candidate, progress))
        self.keep("judged.jsonl", record)
        return record

    def profile(self, suite: str, task: str, code: str, profiler: str | None = None,
                progress: Progress | None = None) -> dict[str, Any]:
        """``code`` judged and, if correct, profiled by ``profiler`` (default: the first
        usable): ``{"verdict": eval's record, "profile": the profile record}`` (the profile's
        ``error`` says why there is none); the pair is kept in ``profiled.jsonl``."""
        assert self.profiling is not None
        usable = self.profiling.profilers
        if profiler is not None and profiler not in usable:
            raise ToolError(f"argument 'profiler': {profiler!r} is not usable here ({suggest(profiler, usable)})")
        chosen = usable[profiler] if profiler is not None else next(iter(usable.values()))
        found = self.suites.task(suite, task)
        candidate = self.draft(found, code)
        verdict = self.verdict(found, candidate, progress)
        if progress is not None and verdict.correct:
            progress(f"profiling {task} with {chosen.profiler_name} (at most {self.profiling.seconds:g} s)")
        record = profile_candidate(self.evaluator, found, candidate, verdict, chosen, self.profiling.seconds,
                                   self.hardware)
        answer = {"verdict": result_record(found, verdict), "profile": record.to_dict()}
        self.keep("profiled.jsonl", answer)
        return answer

    def tune(self, suite: str, task: str, code: str, progress: Progress | None = None) -> dict[str, Any]:
        """``code`` judged and, if correct and timed, tuned within the budget: ``geak-core
        tune``'s record (why it was not tuned, if it was not); also kept in ``tuned.jsonl``."""
        assert self.tuning is not None
        found = self.suites.task(suite, task)
        candidate = self.draft(found, code)
        verdict = self.verdict(found, candidate, progress)
        budget = self.tuning.budget
        if progress is not None and verdict.correct:
            progress(f"tuning {task}: at most {budget.candidates} variants in {budget.seconds:g} s")
        record, _ = tune_candidate(found, candidate, verdict, self.tuning.tuner, self.evaluator, budget)
        self.keep("tuned.jsonl", record)
        return record


class JudgeTools(ToolSet):
    """The tools a coding agent calls (``geak-core mcp``): those of ``ToolSet`` over a judge
    this object owns (closed by ``close``), and the stored runs of ``runs_dir``
    (``runs_list``, ``runs_show``). Each judged code is written under ``out_dir`` as a file
    ``geak-core eval`` reads back for its task, whose path is the candidate's id, and each
    record goes to a journal there."""

    def __init__(self, evaluator: Any, suites: Suites, *, out_dir: str | Path, runs_dir: str | Path,
                 hardware: HardwareProfile | None = None, tuning: Tuning | None = None,
                 profiling: Profiling | None = None) -> None:
        self.out_dir = Path(out_dir).resolve()
        self.runs_dir = Path(runs_dir)
        self._journals: dict[str, RecordFile] = {}
        self._lock = threading.Lock()
        super().__init__(evaluator, suites, hardware=hardware, tuning=tuning, profiling=profiling)

    def functions(self) -> dict[str, Callable[..., dict[str, Any]]]:
        return {**super().functions(), "runs_list": self.runs_list, "runs_show": self.runs_show}

    def close(self) -> None:
        """Let the judge go (its children end)."""
        self.evaluator.close()

    def draft(self, task: Task, code: str) -> Candidate:
        """The candidate of ``code``, written to its file under ``out_dir``, whose path is
        its id (as ``geak-core eval`` names a file's candidate)."""
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
        path = self.out_dir / "candidates" / task.suite / f"{task.id}__{digest}.py"
        if not path.resolve().is_relative_to(self.out_dir):
            raise ToolError(f"argument 'task': {task.id!r} cannot name a file under the output folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, code)
        return Candidate(id=str(path), task_id=task.id, code=code, origin="file")

    def keep(self, journal: str, record: dict[str, Any]) -> None:
        """``record`` added to ``out_dir/journal``, rewritten whole (``RecordFile``)."""
        with self._lock:
            found = self._journals.get(journal)
            if found is None:
                found = self._journals[journal] = RecordFile(str(self.out_dir / journal), keep=True)
            found.add(record)
            found.write()

    # -- runs ----------------------------------------------------------------------------

    def runs_list(self) -> dict[str, Any]:
        """``geak-core runs list --json``'s rows for the runs folder."""
        return {"runs_dir": str(self.runs_dir), "runs": list_runs(self.runs_dir)}

    def run_dir(self, run: str) -> Path:
        """The folder of stored run ``run`` (an id or a unique prefix of one) in the runs
        folder, and in no other."""
        if "/" in run or "\\" in run or run.startswith("."):
            raise ToolError(f"argument 'run': a run id or a prefix of one, not a path: {run!r}")
        try:
            return resolve_run(run, self.runs_dir)
        except InputError as exc:
            raise ToolError(f"argument 'run': {exc}") from exc

    def runs_show(self, run: str) -> dict[str, Any]:
        """``geak-core runs show --json``'s record of the run."""
        return run_details(self.run_dir(run))
