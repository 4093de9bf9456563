"""A stored run's best kernel for a KernelBench-format task, as an installable package.

``geak-core export-kernel`` writes, around a task's best correct candidate: the kernel
module (the candidate's code, verbatim), a copy of the task's reference file, a
``torch.library`` custom op (``<namespace>::<name>``) whose schema takes the forward's inputs
and the module's parameters and buffers, with a fake implementation that runs the reference
on fake tensors, a drop-in ``ModelNew``, a pytest file, a benchmark script, a
``pyproject.toml``, a README and ``provenance.json``. The generated modules are built from
the templates ``assets/kernel_*.tmpl``.

The candidate never runs here: what the op's schema needs to know of the task (the kinds
and names of the forward's inputs, the structure of its output) comes from the reference
run on the meta device in a child process (``kernel_probe``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import keyword
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geak_core import __version__
from geak_core.api.errors import InputError, suggest
from geak_core.api.tasks import Task
from geak_core.engine.store import atomic_write
from geak_core.reporting.rundata import CandidateRow, RunData

KERNELBENCH_FORMAT = "kernelbench"
DEFAULT_NAMESPACE = "geak"
ASSETS = Path(__file__).with_name("assets")
PROBE_TIMEOUT_S = 180.0
# {dtype: (atol, rtol)} where the task gives none for a dtype
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4), "float64": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2),
}
# torch's own namespaces: an op there would shadow or clash with torch's operators
RESERVED_NAMESPACES = frozenset({"aten", "prim", "prims", "torch", "quantized", "_quantized", "inductor"})
# names the op's schema gives its own arguments, so a forward's argument may not take them
RESERVED_ARGS = frozenset({"weights", "config", "out", "self"})
SCHEMA_KINDS = frozenset({"Tensor", "int", "float", "bool", "str", "Tensor[]", "int[]", "float[]", "bool[]"})


@dataclass
class KernelExport:
    """What :func:`write_kernel_package` wrote."""

    folder: Path
    package: str  # the import name
    distribution: str  # the pip name
    qualname: str  # namespace::name
    task_id: str
    candidate_id: str
    files: list[str]  # relative to folder


# -- choosing what to export ---------------------------------------------------------------


def correct_rows(run: RunData, task_id: str) -> list[CandidateRow]:
    """The task's candidates whose latest verdict is correct, with code, in run order."""
    return [r for r in run.rows_of(task_id) if r.verdict == "correct" and r.candidate.code.strip()]


def choose_task(run: RunData, task_id: str | None) -> str:
    """``task_id`` where the run has it; with none, the run's one task with a correct candidate."""
    known = set(run.tasks) | {r.candidate.task_id for r in run.rows}
    if task_id is not None:
        if task_id not in known:
            raise InputError(f"run {run.run_id} has no task {task_id!r} ({suggest(task_id, known)})")
        return task_id
    solved = sorted(t for t in known if correct_rows(run, t))
    if len(solved) == 1:
        return solved[0]
    if not solved:
        raise InputError(f"run {run.run_id} has no task with a correct candidate: nothing to export")
    raise InputError(f"run {run.run_id} has {len(solved)} tasks with a correct candidate "
                     f"({', '.join(solved)}): choose one with --task")


def best_candidate(run: RunData, task_id: str, candidate_id: str | None = None) -> CandidateRow:
    """``candidate_id`` (which must be correct), or the task's best correct candidate as the
    run's summary chose it: the fastest timed one, else the first correct one."""
    rows = correct_rows(run, task_id)
    if candidate_id is not None:
        row = next((r for r in run.rows_of(task_id) if r.candidate.id == candidate_id), None)
        if row is None:
            ids = [r.candidate.id for r in run.rows_of(task_id)]
            raise InputError(f"task {task_id!r} of run {run.run_id} has no candidate {candidate_id!r} "
                             f"({suggest(candidate_id, ids)})")
        if row not in rows:
            raise InputError(f"candidate {candidate_id} is not correct (verdict: {row.verdict}): "
                             "only a correct candidate can be exported")
        return row
    if not rows:
        judged = len(run.rows_of(task_id))
        raise InputError(f"task {task_id!r} of run {run.run_id} has no correct candidate "
                         f"({judged} candidate{'s' if judged != 1 else ''} judged): nothing to export")
    summary = next((t for t in run.summary.tasks if t.task_id == task_id), None) if run.summary else None
    chosen = summary.best_candidate_id if summary is not None else None
    row = next((r for r in rows if r.candidate.id == chosen), None)
    if row is not None:
        return row
    timed = [r for r in rows if r.result is not None and r.result.speedup is not None]
    if timed:
        return max(timed, key=lambda r: r.result.speedup or 0.0)
    return rows[0]


def run_task(run: RunData, task_id: str, plugins: Any = None) -> Task:
    """The task as the run's suite (its recipe's ``[suite]``, built again) gives it now."""
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import SuiteSection, _Source, validate_options

    manager = plugins or get_plugin_manager()
    section = dict(run.recipe.get("suite") or {})
    suite_name = str(section.get("name") or SuiteSection().name)
    spec = manager.spec("suite", suite_name)
    problems: list[Any] = []
    core_keys = tuple(f.name for f in dataclasses.fields(SuiteSection))
    options = validate_options(spec.options, section, "suite", _Source(), problems, ignore=core_keys)
    if problems:
        raise InputError(f"the suite {suite_name!r} of run {run.run_id} cannot be built again: "
                         + "; ".join(p.format() for p in problems))
    try:
        return spec.build(options).get(task_id)
    except InputError as exc:
        raise InputError(f"the suite {suite_name!r} of run {run.run_id} no longer has task "
                         f"{task_id!r}: {exc}") from exc


def kernelbench_reference(task: Task) -> Path:
    """The task's reference file, if the task is in KernelBench's format."""
    extra = task.extra or {}
    if extra.get("format") != KERNELBENCH_FORMAT:
        raise InputError(f"task {task.key} is not in KernelBench format (its extra['format'] is "
                         f"{extra.get('format')!r}, not {KERNELBENCH_FORMAT!r}): export-kernel needs a "
                         "reference Model with get_inputs() and get_init_inputs()")
    path = Path(str(extra.get("file") or task.reference or ""))
    if not path.is_file():
        raise InputError(f"task {task.key}: its reference file {str(path)!r} is not there")
    return path


# -- names -------------------------------------------------------------------------------------


def op_name(task_id: str) -> str:
    """A Python identifier for the op from a task id: lower case, words joined by ``_``,
    KernelBench's leading problem number dropped (``19_ReLU`` -> ``relu``)."""
    words = re.sub(r"[^0-9a-zA-Z]+", "_", task_id).strip("_").lower()
    name = re.sub(r"^[0-9_]+", "", words)
    if not name:
        name = f"task_{words}" if words else "kernel"
    return name + "_" if keyword.iskeyword(name) else name


def check_identifier(value: str, what: str) -> str:
    if not value.isidentifier() or not value.isascii() or keyword.iskeyword(value):
        raise InputError(f"{what} {value!r} is not a Python identifier (letters, digits and _, "
                         "not starting with a digit)")
    return value


# -- the reference, seen from outside ----------------------------------------------------------


def probe_reference(path: Path, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """The reference's inputs, parameters and output structure, from a child process that
    runs it on the meta device (:mod:`geak_core.reporting.kernel_probe`, run by its path),
    in a session of its own (killed whole on a timeout) with an environment that carries
    no credentials."""
    from geak_core.kit.sandbox import scrub_env
    from geak_core.reporting import kernel_probe

    env = scrub_env(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    child = subprocess.Popen([sys.executable, kernel_probe.__file__, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
                             cwd=path.parent, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise InputError(f"the reference {path} did not run on the meta device within {timeout_s:g} s") from None
    found = next((json.loads(line[len(kernel_probe.RESULT_MARKER):]) for line in reversed(stdout.splitlines())
                  if line.startswith(kernel_probe.RESULT_MARKER)), None)
    if child.returncode != 0 or not isinstance(found, dict):
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit status {child.returncode}"
        raise InputError(f"the reference {path} does not run on the meta device: {why}")
    if found.get("error"):
        raise InputError(f"the reference {path}: {found['error']}")
    return found


def schema_arguments(probe: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, schema type) of each forward input: the forward's own names where they can
    be used in a schema beside ``weights`` and ``config``."""
    arguments: list[tuple[str, str]] = []
    taken: set[str] = set()
    for i, (item, name) in enumerate(zip(probe["inputs"], probe["arg_names"], strict=True)):
        kind = item.get("kind")
        if kind not in SCHEMA_KINDS:
            raise InputError(f"input {i} of the reference's get_inputs() is a {item.get('type', kind)}: "
                             "an op schema takes tensors, numbers, strings and lists of them")
        while name in RESERVED_ARGS or name in taken:
            name += "_"
        taken.add(name)
        arguments.append((name, kind))
    return arguments


def output_schema(probe: dict[str, Any]) -> str:
    output = probe["output"]
    if output.get("kind") not in ("Tensor", "tuple", "list"):
        raise InputError(f"the reference's Model returns a {output.get('type')}: an exported op "
                         "returns a Tensor, or a tuple or list of Tensors")
    count = int(output["count"])
    return "Tensor" if count == 1 else "(" + ", ".join(["Tensor"] * count) + ")"


def tolerances(task: Task) -> dict[str, tuple[float, float]]:
    merged = dict(DEFAULT_TOLERANCES)
    for dtype, pair in (task.tolerances or {}).items():
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            merged[str(dtype).removeprefix("torch.")] = (float(pair[0]), float(pair[1]))
    return merged


# -- provenance --------------------------------------------------------------------------------


def provenance(run: RunData, task: Task, row: CandidateRow, qualname: str) -> dict[str, Any]:
    result = row.result
    manifest = run.manifest or {}
    return {
        "exported_by": f"geak-core {__version__}",
        "exported_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "op": qualname,
        "run_id": run.run_id,
        "run_name": run.name,
        "suite": task.suite,
        "task": task.id,
        "reference_file": str(task.extra.get("file") or task.reference),
        "candidate_id": row.candidate.id,
        "lineage": row.candidate.lineage,
        "iteration": row.candidate.iteration,
        "round_kind": row.round_kind,
        "model": row.model or run.model or None,
        "backend": row.backend,
        "verdict": {
            "verdict": row.verdict,
            "correct": bool(result and result.correct),
            "speedup": result.speedup if result else None,
            "speedup_method": result.speedup_method if result else None,
            "speedup_vs_eager": result.speedup_vs_eager if result else None,
            "roofline_fraction": result.roofline_fraction if result else None,
            "performance_measured": bool(result and result.performance_measured),
            "mode": result.mode if result else None,
            "device": result.device if result else None,
            "flags": list(result.flags) if result else [],
        },
        "gpu": manifest.get("gpu"),
        "torch": manifest.get("torch"),
        "triton": manifest.get("triton"),
        "python": manifest.get("python"),
    }


def _figure(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def provenance_table(prov: dict[str, Any]) -> str:
    verdict = prov["verdict"]
    speedup = _figure(verdict["speedup"])
    if verdict["speedup"] is not None and verdict["speedup_method"]:
        speedup += f" ({verdict['speedup_method']})"
    rows = [
        ("run", prov["run_id"]), ("suite / task", f"{prov['suite']} / {prov['task']}"),
        ("candidate", prov["candidate_id"]), ("model", prov["model"]),
        ("verdict", verdict["verdict"]), ("speedup", speedup),
        ("speedup vs PyTorch eager", _figure(verdict["speedup_vs_eager"])),
        ("judged on", f"{verdict['device'] or '-'} ({verdict['mode'] or '-'})"),
        ("run's GPU", prov["gpu"]), ("torch", prov["torch"]), ("triton", prov["triton"]),
        ("exported by", f"{prov['exported_by']}, {prov['exported_at']}"),
    ]
    lines = ["| | |", "|---|---|"]
    lines += [f"| {k} | {_figure(v).replace('|', '/')} |" for k, v in rows]
    lines.append("")
    lines.append("A speedup is the judge's: the reference's latency over the kernel's on the GPU it "
                 "ran on; a run under Triton's interpreter (a CPU) times nothing.")
    return "\n".join(lines)


def _requirement(name: str, version: Any, floor: str) -> str:
    """``name>=floor,<next major`` from the version the run recorded (``floor`` where none)."""
    match = re.match(r"(\d+)\.", str(version or ""))
    major = int(match[1]) if match else int(floor.split(".")[0])
    lower = floor if int(floor.split(".")[0]) >= major else f"{major}.0"
    return f"{name}>={lower},<{major + 1}"


# -- writing -----------------------------------------------------------------------------------


def _render(template: str, values: dict[str, str]) -> str:
    text = (ASSETS / template).read_text()
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    left = re.findall(r"@@[A-Z_]+@@", text)
    if left:  # a template and this module disagree
        raise RuntimeError(f"{template}: no value for {', '.join(sorted(set(left)))}")
    return text


def _plain(text: str) -> str:
    """Text safe inside a generated docstring or Markdown code span."""
    return re.sub(r"[^\w .:/+-]", "_", text)


def folder_is_free(folder: Path, force: bool) -> None:
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise InputError(f"{folder} exists and is not empty (--force replaces its contents)")


def write_kernel_package(run: RunData, task: Task, row: CandidateRow, folder: str | os.PathLike[str], *,
                         namespace: str = DEFAULT_NAMESPACE, name: str | None = None, force: bool = False,
                         probe: dict[str, Any] | None = None) -> KernelExport:
    """Write the package for ``row`` (a correct candidate of KernelBench-format ``task``)
    into ``folder``, which must be empty or absent (``force``: replaced). ``probe``: what
    :func:`probe_reference` found (found here when not given)."""
    folder = Path(folder)
    check_identifier(namespace, "namespace")
    if namespace in RESERVED_NAMESPACES:
        raise InputError(f"namespace {namespace!r} is torch's own: choose another with --namespace")
    name = check_identifier(name or op_name(task.id), "op name")
    folder_is_free(folder, force)
    if force and folder.exists() and Path(run.dir).resolve().is_relative_to(folder.resolve()):
        raise InputError(f"{folder} holds the run {run.run_id}: --force would delete it")
    reference = kernelbench_reference(task)
    probe = probe or probe_reference(reference)
    arguments = schema_arguments(probe)
    qualname = f"{namespace}::{name}"
    schema = "(" + ", ".join([f"{t} {n}" for n, t in arguments] + ["Tensor[] weights", "int config=0"]) + \
        ") -> " + output_schema(probe)
    package = f"{namespace}_{name}"
    distribution = package.replace("_", "-")
    output = probe["output"]
    count = int(output["count"])
    kind = output["kind"]
    returned = {("Tensor", 1): "out", ("tuple", 1): "(out,)", ("list", 1): "[out]"}.get((kind, count)) \
        or ("out" if kind == "tuple" else "list(out)")
    names = [n for n, _ in arguments]
    tolerance = tolerances(task)
    prov = provenance(run, task, row, qualname)
    manifest = run.manifest or {}
    values = {
        "NAMESPACE": namespace, "NAME": name, "QUALNAME": qualname, "SCHEMA": schema,
        "PACKAGE": package, "DISTRIBUTION": distribution, "TASK": _plain(task.id),
        "NAMESPACE_LITERAL": repr(namespace), "NAME_LITERAL": repr(name), "SCHEMA_LITERAL": repr(schema),
        "OUTPUT_LITERAL": repr(kind), "OUTPUT_COUNT": str(count),
        "PARAMS": "".join(f"{n}, " for n in names),
        "FORWARD_PARAMS": "".join(f", {n}" for n in names),
        "INPUT_TUPLE": "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")",
        "RETURN": returned,
        "TOLERANCES": repr({k: tuple(v) for k, v in sorted(tolerance.items())}),
        "TOLERANCE_TEXT": ", ".join(f"{k} atol {a:g} rtol {r:g}" for k, (a, r) in sorted(tolerance.items())),
        "DESCRIPTION": json.dumps(f"torch.ops.{namespace}.{name}: a Triton kernel for task {task.id}, "
                                  "exported by geak-core"),
        "DEPENDENCIES": ", ".join(json.dumps(d) for d in (
            _requirement("torch", manifest.get("torch"), "2.4"),
            _requirement("triton", manifest.get("triton"), "3.0"))),
        "PROVENANCE_TABLE": provenance_table(prov),
    }
    files = {
        "pyproject.toml": _render("kernel_pyproject.toml.tmpl", values),
        "README.md": _render("kernel_readme.md.tmpl", values),
        f"{package}/__init__.py": _render("kernel_init.py.tmpl", values),
        f"{package}/kernel.py": row.candidate.code,
        f"{package}/reference.py": reference.read_text(),
        f"{package}/op.py": _render("kernel_op.py.tmpl", values),
        f"{package}/benchmark.py": _render("kernel_benchmark.py.tmpl", values),
        f"{package}/provenance.json": json.dumps(prov, indent=2) + "\n",
        f"tests/test_{package}.py": _render("kernel_test.py.tmpl", values),
    }
    _write_folder(folder, files)
    return KernelExport(folder=folder, package=package, distribution=distribution, qualname=qualname,
                        task_id=task.id, candidate_id=row.candidate.id, files=sorted(files))


def _write_folder(folder: Path, files: dict[str, str]) -> None:
    """Every file written beside ``folder`` first, then put in its place in two renames, so a
    failure leaves the old folder (or none) and never half of the new one."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.new-"))
    old: Path | None = None
    try:
        for relative, text in files.items():
            atomic_write(staging / relative, text, fsync=False)
        if folder.exists():
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.old-"))
            os.replace(folder, old / "folder")
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None and (old / "folder").exists() and not folder.exists():
            os.replace(old / "folder", folder)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def export_kernel(run: RunData, folder: str | os.PathLike[str], *, task_id: str | None = None,
                  candidate_id: str | None = None, namespace: str = DEFAULT_NAMESPACE,
                  name: str | None = None, force: bool = False, plugins: Any = None) -> KernelExport:
    """The package for the best correct candidate (or ``candidate_id``) of ``task_id`` (or
    the run's one task with a correct candidate), written into ``folder``."""
    chosen = choose_task(run, task_id)
    task = run_task(run, chosen, plugins)
    kernelbench_reference(task)
    row = best_candidate(run, chosen, candidate_id)
    folder_is_free(Path(folder), force)
    return write_kernel_package(run, task, row, folder, namespace=namespace, name=name, force=force)


__all__ = [
    "DEFAULT_NAMESPACE", "KERNELBENCH_FORMAT", "KernelExport", "best_candidate", "choose_task",
    "export_kernel", "op_name", "probe_reference", "run_task", "write_kernel_package",
]
