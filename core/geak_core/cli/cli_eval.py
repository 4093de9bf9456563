"""``geak-core eval``: judge candidate files or recorded replies against a suite.

Candidates come from files (``--task`` names their task, or the file is named
``<task_id>.py`` / ``<task_id>__anything.py``), from directories of such files,
or from a JSONL file whose records name their task (``task`` or ``task_id``)
and carry ``code``, ``predict`` (a raw model reply; the code is extracted) or
``file`` (a path, relative to the JSONL file). A record without a task is
given to the suite's optional ``resolve_record(record)`` (a suite may know its
records by their label or instruction); failing that, a record with
``predict`` and ``file`` names its task by the file's stem (GEAK-eval's
format). A suite's optional ``record_code(record, task_id)`` extracts the code
of a ``predict`` reply; otherwise ``geak_core.api.extract`` does. A record whose
task the suite's optional ``unusable()`` lists (a task file it cannot judge) is
reported unjudged, flagged ``skipped`` and ``unusable_task``, with the reason.

``--executor`` says where the judge runs (``local``, the default, or a registered
executor such as ``ray``, with ``--executor-option KEY=VALUE``); the verdicts are
the same wherever it runs.

Scripts that judge records themselves (``bench/``) reuse ``entries_from_jsonl``,
``build_executor``, ``build_evaluator``, ``result_record`` (``engine.records``'s, which the
judge's tools write too), ``verdict_line`` and ``summarize``; ``geak-core tune`` reads its candidates (``read_entries``), builds its judge
(``judge_options``, ``build_judge``) and keeps its journal (``read_journal``,
``RecordFile``) with the same code.

Exit status: 0 when every candidate was judged, whatever the verdicts; 1 when
the judge itself failed on some task (its reference crashed, say); 2 for bad
input (unknown suite, evaluator or task, unreadable file, malformed record).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from geak_core.api.components import EvalJob, as_component
from geak_core.api.errors import InputError, OptionError, suggest
from geak_core.api.model import Candidate, EvalResult, pass_at_k
from geak_core.api.tasks import Task
from geak_core.cli.cli_options import (
    ConventionCommand,
    build_with_options,
    exit_on_bad_input,
    json_flag,
    out_option,
    progress_echo,
)
from geak_core.engine.plugins import get_plugin_manager
from geak_core.engine.progress import clip, clip_left
from geak_core.engine.records import RecordFile, result_record


@dataclass
class _Entry:
    """One candidate to judge, or one already decided (no code could be extracted)."""

    task: Task
    candidate: Candidate
    verdict: EvalResult | None = None


class _Inputs:
    def __init__(self, suite: Any):
        self.suite = as_component("suite", suite)
        self._tasks: dict[str, Task] | None = None

    def tasks(self) -> dict[str, Task]:
        if self._tasks is None:
            self._tasks = {t.id: t for t in self.suite.tasks()}
        return self._tasks

    def task(self, task_id: str, where: str) -> Task:
        tasks = self.tasks()
        if task_id not in tasks:
            raise InputError(f"{where}: suite {self.suite.name!r} has no task {task_id!r} "
                             f"({suggest(task_id, tasks)})")
        return tasks[task_id]

    def task_of_file(self, path: Path) -> Task:
        """The task a file is named for: ``<task_id>.py``, ``<task_id>__anything.py``, or a
        name the suite's ``resolve_record`` knows (KernelBench's sample files)."""
        stem = path.stem.split("__", 1)[0]
        if stem not in self.tasks():
            known = self.suite.resolve_record({"file": path.name})
            if known in self.tasks():
                stem = known
        return self.task(stem, str(path))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:  # a binary file, say: the decoder's text helps no one
        raise InputError(f"{path}: not a text file (byte {exc.start} is no UTF-8; a candidate is "
                         "Python source)") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from exc


def _from_paths(paths: Iterable[str], task_id: str | None, inputs: _Inputs) -> list[_Entry]:
    entries = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix == ".py" and p.is_file())
            if not files:
                raise InputError(f"{path}: no .py candidate files in this directory")
        elif path.is_file():
            files = [path]
        else:
            raise InputError(f"{path}: no such file or directory")
        for file in files:
            task = inputs.task(task_id, str(file)) if task_id else inputs.task_of_file(file)
            entries.append(_Entry(task, Candidate(id=str(file), task_id=task.id, code=_read(file),
                                                  origin="file")))
    return entries


def _from_jsonl(path_text: str, inputs: _Inputs) -> list[_Entry]:
    path = Path(path_text)
    entries = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise InputError(f"{where}: each line must be a JSON object")
        task_id = record.get("task") or record.get("task_id")
        if not task_id:
            task_id = inputs.suite.resolve_record(record)  # the suite knows its own formats
        if not task_id and record.get("file") and "predict" in record:
            task_id = Path(str(record["file"])).stem
        if not task_id:
            raise InputError(f"{where}: the record names no task (fields 'task' or 'task_id'), "
                             f"and suite {inputs.suite.name!r} cannot tell it from the record")
        cid = str(record.get("id") or record.get("candidate_id") or f"{path.name}:{number}")
        unusable = _unusable_reason(inputs, str(task_id))
        if unusable is not None:
            entries.append(_unusable_entry(inputs.suite.name, str(task_id), cid, unusable))
            continue
        task = inputs.task(str(task_id), where)
        verdict = None
        if isinstance(record.get("code"), str):
            code = record["code"]
        elif isinstance(record.get("predict"), str):
            code = inputs.suite.record_code(record, task.id)
            if code is None:
                verdict = EvalResult(task_id=task.id, candidate_id=cid, failed_stage="extract",
                                     reason="no code could be found in the reply")
                code = ""
        elif isinstance(record.get("file"), str):
            code = _read(path.parent / record["file"])
        else:
            raise InputError(f"{where}: the record has no 'code', 'predict' or 'file' field")
        entries.append(_Entry(task, Candidate(id=cid, task_id=task.id, code=code, origin="file"),
                              verdict))
    return entries


def _unusable_reason(inputs: _Inputs, task_id: str) -> str | None:
    """Why the suite cannot judge ``task_id`` (its ``unusable()``), or None."""
    if task_id in inputs.tasks():
        return None
    return inputs.suite.unusable().get(task_id)


def _unusable_entry(suite_name: str, task_id: str, cid: str, why: str) -> _Entry:
    task = Task(suite=suite_name, id=task_id, instruction="", entry_points=[], harness="")
    verdict = EvalResult(task_id=task_id, candidate_id=cid, flags=["skipped", "unusable_task"],
                         reason=f"skipped: the suite cannot judge task {task_id!r}: {why}")
    return _Entry(task, Candidate(id=cid, task_id=task_id, code="", origin="file"), verdict)


def entries_from_jsonl(path: str, suite: Any) -> list[_Entry]:
    """The candidates of a JSONL file of records, as ``geak-core eval --candidates`` reads
    them: ``entry.verdict`` is set where no judging is needed (no code, unusable task)."""
    return _from_jsonl(path, _Inputs(suite))


def build_evaluator(name: str, overrides: dict[str, Any], executor: Any = None) -> Any:
    """The registered evaluator ``name`` with the ``overrides`` its options know (others,
    and None values, are left at their defaults), built by ``executor`` (see
    ``build_executor``; None: in this process)."""
    manager = get_plugin_manager()
    spec = manager.spec("evaluator", name)
    options = None
    if spec.options is not None and dataclasses.is_dataclass(spec.options):
        fields = {f.name for f in dataclasses.fields(spec.options)}
        options = spec.options(**{k: v for k, v in overrides.items() if k in fields and v is not None})
    if executor is None:
        return manager.build("evaluator", name, options)
    try:
        return as_component("evaluator", executor.evaluator(spec, options))
    except OptionError as exc:
        raise InputError(f"--executor-option {exc.key}: {exc.message}"
                         + (f" ({exc.hint})" if exc.hint else "")) from exc


def build_executor(name: str, pairs: Iterable[str]) -> Any:
    """The registered executor ``name`` with ``KEY=VALUE`` options (VALUE in TOML syntax; a
    bare word is a string), checked against its options as a recipe's ``[executor]`` is."""
    return build_with_options("executor", name, pairs, "--executor-option")


def read_entries(suite_name: str, paths: Iterable[str], task_id: str | None,
                 candidates_file: str | None, suite_options: tuple[str, ...] = ()) -> list[_Entry]:
    """The candidates a command is given, as ``geak-core eval`` reads them: ``paths`` (files
    of ``task_id``, or named by their task; folders of such files) and the records of
    ``candidates_file`` (JSONL), for the suite built with ``suite_options`` (``KEY=VALUE``)."""
    inputs = _Inputs(build_with_options("suite", suite_name, suite_options, "--suite-option"))
    if task_id:
        inputs.task(task_id, "--task")
    entries = _from_paths(paths, task_id, inputs)
    if candidates_file:
        entries += _from_jsonl(candidates_file, inputs)
    return entries


suite_option_flag = click.option(
    "--suite-option", "suite_options", multiple=True, metavar="KEY=VALUE",
    help="An option of the suite (repeatable), as in a recipe's [suite] section, e.g. "
         "path=my_ops/ for --suite local.")


def judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose the judge and how it runs, shared by ``eval`` and ``tune``
    (``build_judge`` takes them as they come)."""
    options = [
        click.option("--evaluator", "evaluator_name", default="triton", show_default=True),
        click.option("--executor", "executor_name", default="local", show_default=True,
                     help="Where the judge runs: local (this machine) or a registered executor, such as "
                          "ray (judges on a Ray cluster's workers)."),
        click.option("--executor-option", "executor_options", multiple=True, metavar="KEY=VALUE",
                     help="An option of the executor, VALUE in TOML syntax (repeatable), e.g. "
                          "address=auto or judges=4."),
        click.option("--mode", type=click.Choice(["auto", "interpreter", "gpu"]), help="Judge mode."),
        click.option("--workers", type=int,
                     help="GPUs to use (default: all visible; each runs several candidates, timing one at "
                          "a time), or CPU workers under the interpreter."),
        click.option("--timeout", "timeout_s", type=float,
                     help="Seconds per candidate child at most (within it, a budget scaled from the task's "
                          "reference time: the evaluator's budget_scale and budget_floor_s)."),
        click.option("--hardware", help="Hardware profile: roofline figures, and the limits of the tuner's "
                                        "variants (default: detect)."),
        click.option("--seeds", help="Comma-separated seeds replacing the tasks' own."),
        click.option("--speedup-method", type=click.Choice(["mean_ratio", "sum", "geomean"]),
                     help="The headline speedup's aggregate over a task's shapes: mean_ratio (the GEAK "
                          "paper's mean of per-shape ratios; the judge's default), sum (GEAK-eval's code: "
                          "total latency over total latency) or geomean. Every record keeps all three."),
        click.option("--pythonpath", multiple=True, help="Extra import path for the judge's children."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_judge(evaluator_name: str, executor_name: str, executor_options: tuple[str, ...],
                mode: str | None, workers: int | None, timeout_s: float | None, hardware: str | None,
                seeds: str | None, speedup_method: str | None, pythonpath: tuple[str, ...]) -> Any:
    """The evaluator ``judge_options`` describe, built by its executor."""
    seed_list = None
    if seeds:
        try:
            seed_list = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError as exc:
            raise InputError(f"--seeds: expected comma-separated integers, got {seeds!r}") from exc
    executor = build_executor(executor_name, executor_options)
    return build_evaluator(evaluator_name, {
        "mode": mode, "workers": workers, "timeout_s": timeout_s, "hardware": hardware,
        "seeds": seed_list, "extra_pythonpath": [os.path.abspath(p) for p in pythonpath] or None,
        "speedup_method": speedup_method,
    }, executor)


def read_journal(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The records an earlier ``-o/--out`` file holds (a ``.json`` list or ``.jsonl`` lines),
    by (task, candidate id): what ``--resume`` does not do again. Records of judge errors are
    left out (done again), and so is a line that does not parse (a JSONL file cut short)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f"--resume: cannot read {path}: {exc}") from exc
    records: list[Any] = []
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"--resume: {path} is not a JSON list of records: {exc}") from exc
    else:
        for line in text.splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        if not isinstance(record, dict) or "task" not in record or "candidate" not in record:
            continue
        if "judge_error" in (record.get("flags") or []):
            continue
        kept[(str(record["task"]), str(record["candidate"]))] = record
    return kept


def load_journal(path: str) -> dict[tuple[str, str], EvalResult]:
    """The verdicts an earlier ``-o/--out`` file holds, by (task, candidate id)
    (``read_journal``)."""
    kept: dict[tuple[str, str], EvalResult] = {}
    for record in read_journal(path).values():
        data = {k: v for k, v in record.items() if k not in ("task", "suite", "candidate")}
        kept[(str(record["task"]), str(record["candidate"]))] = EvalResult.from_dict(
            {**data, "task_id": record["task"], "candidate_id": record["candidate"]})
    return kept


def summarize(pairs: list[tuple[Task, EvalResult]], ks: Iterable[int],
              codes: Mapping[str, str] | None = None, speedup_method: str | None = None) -> dict[str, Any]:
    """Call accuracy, execution accuracy, mean speedup (against the baseline and against
    PyTorch eager) and pass@k over judged candidates; ``per_task``: each task's
    ``TaskSummary`` (its best candidate's speedups and, given ``codes`` by candidate id,
    code metrics). ``mean_speedup`` and ``geomean_speedup`` are over the correct candidates'
    headline speedups, whose aggregate ``speedup_method`` names (``scaling.run_speedup_method``
    of the verdicts, ``speedup_method`` the judge's where nothing was timed); ``speedups``
    holds the mean of each aggregate."""
    from geak_core.api.scaling import SPEEDUP_METHODS, result_speedups, run_speedup_method
    from geak_core.engine.report import summarize_task

    judged = [(t, r) for t, r in pairs if "skipped" not in r.flags and "judge_error" not in r.flags]
    by_task: dict[str, list[EvalResult]] = defaultdict(list)
    tasks: dict[str, Task] = {}
    for task, result in judged:
        by_task[task.id].append(result)
        tasks[task.id] = task
    speedups = [r.speedup for _, r in judged if r.correct and r.speedup is not None]
    eager = [r.speedup_vs_eager for _, r in judged if r.correct and r.speedup_vs_eager is not None]
    summary: dict[str, Any] = {
        "candidates": len(pairs),
        "judged": len(judged),
        "skipped": sum("skipped" in r.flags for _, r in pairs),
        "judge_errors": sum("judge_error" in r.flags for _, r in pairs),
        "tasks": len(by_task),
        "call_accuracy": sum(r.call_ok for _, r in judged) / len(judged) if judged else None,
        "execution_accuracy": sum(r.correct for _, r in judged) / len(judged) if judged else None,
        "speedup_method": run_speedup_method((r for _, r in judged), speedup_method),
        "mean_speedup": sum(speedups) / len(speedups) if speedups else None,
        "geomean_speedup": (math.exp(sum(math.log(x) for x in speedups if x > 0) / len(speedups))
                            if speedups and all(x > 0 for x in speedups) else None),
        "speedups": {m: _mean_of([result_speedups(r)[m] for _, r in judged]) for m in SPEEDUP_METHODS},
        "undecided": [{"task": t.id, "candidate": r.candidate_id,
                       "kind": undecided_kind(r),
                       "reason": (r.reason or "").splitlines()[0] if r.reason else ""}
                      for t, r in pairs if "skipped" in r.flags or "judge_error" in r.flags],
        "mean_speedup_vs_eager": sum(eager) / len(eager) if eager else None,
        "pass_at_k": {},
        "per_task": [
            summarize_task(tasks[task_id], len(results), [(i, r.candidate_id, r) for i, r in enumerate(results)],
                           codes=codes).to_dict()
            for task_id, results in by_task.items()
        ],
    }
    if by_task:
        smallest = min(len(v) for v in by_task.values())
        for k in sorted(set(ks)):
            if 1 <= k <= smallest:
                values = [pass_at_k(len(v), sum(r.correct for r in v), k) for v in by_task.values()]
                summary["pass_at_k"][str(k)] = sum(values) / len(values)
    return summary


def _mean_of(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


class EvalProgress:
    """What ``geak-core eval`` shows while it judges: each verdict's line, and on a terminal
    a status line under them (candidates judged of all, correct, tasks, elapsed, ETA); when
    stderr is not a terminal, a plain ``progress:`` line after every tenth of the candidates
    (of twenty or more), and, given ``echo``, one every ``heartbeat_s`` in which nothing was
    printed (a slow candidate never looks like a dead process). No LLM is called, so there
    are no tokens or cost to show."""

    def __init__(self, total: int, *, tty: bool, refresh_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, echo: Callable[[str], Any] | None = None,
                 heartbeat_s: float = 30.0, evaluator: Any = None):
        import threading

        from geak_core.engine.progress import StatusLine

        self.evaluator = evaluator  # a built evaluator: its judging() names what is in flight
        self._lock = threading.Lock()
        self._printed = time.monotonic()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        if echo is not None and not tty and heartbeat_s > 0:
            self._heartbeat = threading.Thread(target=self._beat, args=(echo, heartbeat_s),
                                               name="geak-eval-progress", daemon=True)
        self.total = total
        self.count = 0
        self.correct = 0
        self.tasks: set[str] = set()
        self.clock = clock
        self.started = clock()
        self.step = max(1, total // 10) if total >= 20 else 0
        self.status = StatusLine(self.text, refresh_s=refresh_s) if tty else None
        if self.status is not None:
            self.status.start()
        if self._heartbeat is not None:
            self._heartbeat.start()

    def _beat(self, echo: Callable[[str], Any], every_s: float) -> None:
        while not self._stop.wait(min(every_s, 1.0)):
            with self._lock:
                if time.monotonic() - self._printed >= every_s and self.count < self.total:
                    echo("progress: " + self.text() + " " + self.judging_text())
                    self._printed = time.monotonic()

    def judging_text(self) -> str:
        """What is being judged, where the evaluator says (``judging()``): how many, and the
        one judged longest; else "(judging)"."""
        try:
            items = list(self.evaluator.judging()) if self.evaluator is not None else None
        except Exception:  # a progress line never stops the command
            items = None
        if not items:
            return "(judging)"
        task, candidate, seconds = items[0]
        return f"(judging {len(items)}; longest: {task} [{candidate}] for {seconds:.0f} s)"

    def text(self) -> str:
        from geak_core.engine.progress import format_duration

        elapsed = self.clock() - self.started
        eta = elapsed / self.count * (self.total - self.count) if self.count else None
        return (f"judged {self.count}/{self.total} ({self.correct} correct, {len(self.tasks)} tasks)  "
                f"{format_duration(elapsed)}, ETA {format_duration(eta) if eta is not None else '-'}")

    def judged(self, task: Task, result: EvalResult, echo: Callable[[str], Any]) -> None:
        with self._lock:
            self.count += 1
            self.correct += int(result.correct)
            self.tasks.add(task.id)
            if self.status is not None:
                self.status.clear()
            echo(verdict_line(task, result))
            self._printed = time.monotonic()
            if self.status is not None:
                self.status.draw()
            elif self.step and self.count % self.step == 0 and self.count < self.total:
                echo("progress: " + self.text())

    def close(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        if self.status is not None:
            self.status.stop()


def verdict_line(task: Task, result: EvalResult) -> str:
    """The printed line of one verdict."""
    if "skipped" in result.flags:
        verdict = "SKIPPED"
    elif "judge_error" in result.flags:
        verdict = "JUDGE ERROR"
    elif result.correct:
        verdict = "correct"
    elif result.call_ok:
        verdict = f"wrong ({result.failed_stage})"
    else:
        verdict = f"failed ({result.failed_stage})"
    speed = f"  speedup {result.speedup:.3f}x" if result.speedup is not None else ""
    reason = f"  {clip(result.reason.splitlines()[0], 160)}" if result.reason and not result.correct else ""
    return f"{task.id:<32} {clip_left(result.candidate_id, 40):<40} {verdict}{speed}{reason}"


def undecided_kind(result: EvalResult) -> str:
    """Why a record has no verdict: ``unusable_task`` (the suite cannot judge its task),
    ``skipped`` (nothing of it can run here), ``reference_failed`` (its task's reference
    fails, or does not finish, whatever the candidate: the benchmark's, not the candidate's)
    or ``judge_error`` (the judge itself failed)."""
    for kind in ("unusable_task", "skipped", "reference_failed"):
        if kind in result.flags:
            return kind
    return "judge_error"


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """``geak-core eval``'s closing text: the per-task table, the counts, accuracies, speedups,
    pass@k and the undecided records by kind."""
    lines = [""]
    if summary["per_task"]:
        from geak_core.api.model import TaskSummary
        from geak_core.engine.report import format_task_table

        lines += format_task_table([TaskSummary.from_dict(t) for t in summary["per_task"]], "correct")
        lines += ["(per task: correct of its candidates, and its best correct candidate's speedup, speedup "
                  "against PyTorch eager, cyclomatic complexity and maintainability index; n/m: not measured)", ""]
    lines.append(f"candidates {summary['candidates']}  judged {summary['judged']}  "
                 f"skipped {summary['skipped']}  judge errors {summary['judge_errors']}")
    speed, eager = summary["mean_speedup"], summary["mean_speedup_vs_eager"]
    method = summary["speedup_method"]
    lines.append(f"call accuracy {_percent(summary['call_accuracy'])}  "
                 f"execution accuracy {_percent(summary['execution_accuracy'])}  "
                 f"mean speedup {'n/m' if speed is None else f'{speed:.3f}x'} ({method})  "
                 f"mean speedup against PyTorch eager {'n/m' if eager is None else f'{eager:.3f}x'}")
    geo = summary["geomean_speedup"]
    if geo is not None:
        lines.append(f"geometric mean speedup {geo:.3f}x (of the correct candidates' {method} speedups)")
    by_method = summary.get("speedups") or {}
    if any(v is not None for v in by_method.values()):
        from geak_core.api.scaling import headline_first
        from geak_core.engine.report import method_text

        lines.append("mean speedup of the correct candidates by aggregate: " + ", ".join(
            f"{m} {'n/m' if by_method.get(m) is None else f'{by_method[m]:.3f}x'}" + (" (headline)" if m == method else "")
            for m in headline_first(method)))
        lines.append(f"(headline {method_text(method)})")
    lines += [f"pass@{k} {_percent(value)}" for k, value in summary["pass_at_k"].items()]
    if summary["undecided"]:
        kinds: dict[tuple[str, str], int] = defaultdict(int)
        for item in summary["undecided"]:
            kinds[(item["kind"], clip(item["reason"], 120))] += 1
        lines.append(f"undecided {len(summary['undecided'])}:")
        lines += [f"  {count} x {kind}: {reason}" for (kind, reason), count in sorted(kinds.items(), key=lambda kv: -kv[1])]
    return lines


@click.command("eval", cls=ConventionCommand, short_help="Judge candidate kernels: a verdict each.")
@click.argument("paths", nargs=-1)
@click.option("--suite", "suite_name", default="rocm", show_default=True, help="Registered suite.")
@suite_option_flag
@click.option("--task", "task_id", help="Task of the candidate files given as PATHS.")
@click.option("--candidates", "candidates_file", help="JSONL records: task/task_id + code/predict/file.")
@out_option("Write one record per candidate to this file (.json list or .jsonl lines), rewritten after "
            "every verdict: the journal --resume reads.")
@json_flag("Print the summary as JSON on stdout (the verdict and progress lines go to stderr).")
@judge_options
@click.option("-k", "ks", multiple=True, type=int, default=(1,), show_default=True,
              help="pass@k values to report (repeatable).")
@click.option("--resume", is_flag=True,
              help="Keep the verdicts already in -o/--out FILE (a run stopped half-way) and judge only the "
                   "rest; judge errors are judged again.")
def eval_command(
    paths: tuple[str, ...], suite_name: str, suite_options: tuple[str, ...], task_id: str | None,
    candidates_file: str | None, out: str | None, as_json: bool, ks: tuple[int, ...],
    resume: bool, **judge: Any,
) -> None:
    """Judge candidates: correctness, anti-cheat checks and (on a GPU) speed."""
    speedup_method = judge["speedup_method"]
    with exit_on_bad_input():
        entries = read_entries(suite_name, paths, task_id, candidates_file, suite_options)
        if not entries:
            raise InputError("nothing to judge: give candidate files, a directory or --candidates")
        if resume:
            if not out:
                raise InputError("--resume needs -o/--out FILE: the verdicts of the run to resume")
            judged_before = load_journal(out)
            kept = 0
            for entry in entries:
                earlier = judged_before.get((entry.task.id, entry.candidate.id))
                if entry.verdict is None and earlier is not None:
                    entry.verdict = earlier
                    kept += 1
            left = sum(entry.verdict is None for entry in entries)
            click.echo(f"resuming {out}: {kept} verdicts kept, {left} to judge", err=True)
        evaluator = build_judge(**judge)

    pairs: list[tuple[Task, EvalResult]] = []
    echo = progress_echo(as_json)  # with --json, stdout carries the summary alone
    progress = EvalProgress(len(entries), tty=sys.stderr.isatty(), echo=echo, evaluator=evaluator)

    journal = RecordFile(out) if out else None

    def record(task: Task, result: EvalResult) -> None:
        """Print the verdict now and rewrite -o/--out with every record so far (atomically):
        a run stopped half-way leaves the verdicts it reached, in a complete file."""
        pairs.append((task, result))
        progress.judged(task, result, echo)
        if journal is not None:
            journal.add(result_record(task, result))
            journal.write()

    for entry in entries:
        if entry.verdict is not None:
            record(entry.task, entry.verdict)
    jobs = [EvalJob(e.task, e.candidate) for e in entries if e.verdict is None]
    try:
        for job, result in evaluator.evaluate_many(jobs):
            record(job.task, result)
    finally:
        progress.close()
        evaluator.close()

    summary = summarize(pairs, ks, {e.candidate.id: e.candidate.code for e in entries}, speedup_method=speedup_method)
    if journal is not None:
        journal.write()
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        for line in summary_lines(summary):
            click.echo(line)
    if out:
        echo(f"wrote {len(pairs)} records to {out}")
    if summary["judge_errors"]:
        sys.exit(1)
