"""Judges in processes of their own on this machine: the ``local`` executor's ``judges`` option.

One judge process per GPU (``judges = 0`` on a host with several GPUs, or ``judges = N``)
instead of one judge for all of them in the calling process. Each process builds the
run's evaluator exactly as the calling process would, with its share of the GPUs made
visible to it alone (``CUDA_VISIBLE_DEVICES``, or ``HIP_VISIBLE_DEVICES`` on ROCm), and
that evaluator starts its sandboxed children as always: candidate code arrives as text
and runs only in those children. A judge process holds its reference outputs and seeds;
the calling process gets verdicts (``EvalResult``) and nothing else. Before building its
evaluator a judge process drops credentials from its environment (what the sandbox keeps
from children), as a Ray judge does.

Why: on a host of four GPUs, one judge for all of them scaled worse than one judge per
GPU (``bench/eval_throughput.sh``, docs/benchmarks.md): the calling process's own work
(its threads, its child starts) is then shared by every GPU's candidates.

``evaluate_many`` hands a batch out as the processes have room, never all at once: each
process holds at most twice its slots of jobs (``ROOM_PER_SLOT``), and as verdicts free room
(half its slots' worth at a time while all its slots are busy, so that a piece spans several
tasks and its judge computes their references ahead) it takes more, in this order: more of a
task it judged or holds already (its reference runs there once), then the next task no
process holds, tasks in order of their expected cost, the costliest first (asked of a judge
process, which knows the references' past times); a process with free slots and nothing of
its own left takes half of what waits of another's task (running that task's reference for
itself) rather than stand idle while another works through a queue. Each piece is judged by
the process's evaluator's own ``evaluate_many`` (references ahead of their candidates, a
slow reference holding up only its own task). Verdicts are yielded as they arrive, from
whichever process. (Sending each process its whole share up front left one GPU working
through the costliest tasks of a file while the others stood idle.) ``evaluate`` sends one
job to the process that judged its task before, else to the one with the most room, and so
does ``profile`` (the profiler object goes pickled). A judge
process that dies (killed, out of memory) has the jobs it had not answered sent to another,
up to ``max_attempts`` tries each, and a new process is started in its place; a job out of
tries gets a judge-error verdict.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import ComponentSpec, EvalJob, EvaluatorBase, ProfilerBase
from geak_core.api.errors import GeakError, OptionError
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import ProfileRecord
from geak_core.api.tasks import Task
from geak_core.engine.hardware import no_gpu_here
from geak_core.engine.plugins import LOAD_ENV
from geak_core.kit.sandbox import drop_credentials, stop_running_jobs

log = logging.getLogger(__name__)

GPU_LISTS = {"nvidia": ("CUDA_VISIBLE_DEVICES",), "amd": ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")}
# A judge process holds at most this many jobs a slot of a batch's (running and waiting):
# enough that its slots never wait on the calling process, few enough that the jobs still
# waiting can go to a process that has run out of work.
ROOM_PER_SLOT = 2


class JudgeLost(Exception):
    """The judge process went away before it answered."""


# -- which GPUs --------------------------------------------------------------------------


def visible_gpus(options: Any = None) -> tuple[str, list[str]]:
    """(vendor, GPU ids as this process's visibility variable names them) of the GPUs this
    process sees; none under the Triton interpreter or an evaluator told ``mode =
    "interpreter"``, at most the evaluator's ``workers`` in ``gpu`` mode."""
    try:
        named = dict(vars(options)) if options is not None else {}
    except TypeError:  # options without a __dict__: read as none given
        named = {}
    mode = named.get("mode", "auto")
    if mode == "interpreter" or (mode == "auto" and os.environ.get("TRITON_INTERPRET") == "1") or no_gpu_here():
        return "", []
    try:
        import torch

        if not torch.cuda.is_available():
            return "", []
        count = torch.cuda.device_count()
        vendor = "amd" if torch.version.hip else "nvidia"
    except Exception:
        return "", []
    ids = [str(i) for i in range(count)]
    for name in GPU_LISTS[vendor]:
        listed = [v.strip() for v in os.environ.get(name, "").split(",") if v.strip()]
        if listed:
            ids = listed[:count]
            break
    workers = named.get("workers") or 0
    if workers and mode == "gpu":
        ids = ids[:workers]
    return vendor, ids


def shares(vendor: str, gpus: list[str], judges: int) -> list[dict[str, str]]:
    """The environment of each of ``judges`` processes: its share of ``gpus``, as many each
    (refused where they do not divide evenly); no GPU at all where there are none."""
    if not gpus:
        return [{name: "" for names in GPU_LISTS.values() for name in names} for _ in range(judges)]
    if len(gpus) % judges:
        raise OptionError("judges", f"{judges} judge processes cannot share {len(gpus)} GPUs evenly",
                          "set judges to a divisor of the GPU count, or 0 for one per GPU")
    size = len(gpus) // judges
    names = [n for n in GPU_LISTS[vendor] if os.environ.get(n)] or [GPU_LISTS[vendor][0]]
    return [{name: ",".join(gpus[i * size:(i + 1) * size]) for name in names} for i in range(judges)]


# -- the judge process ----------------------------------------------------------------------


def serve(conn: Any, evaluator: str, options: Any, load_plugins: str | None, hardware: Any,
          env: dict[str, str]) -> None:
    """The body of a judge process: build the evaluator, then answer what ``conn`` asks
    until it says ``close`` or the calling process goes away."""
    if multiprocessing.parent_process() is not None:
        # a terminal's Ctrl-C reaches every process of its group: the calling process alone
        # decides, and its close() ends this judge and its children
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.update(env)
    drop_credentials(os.environ, keep=("PYTHON",))  # its import path stays: it imports the plugins
    send_lock = threading.Lock()

    def send(*message: Any) -> None:
        with send_lock:
            try:
                conn.send(message)
            except OSError:
                pass  # the calling process is gone; the loop below ends on its own

    try:
        from geak_core.api.components import as_component
        from geak_core.engine.plugins import PluginManager

        if load_plugins is not None:
            os.environ[LOAD_ENV] = load_plugins
        judge = as_component("evaluator", PluginManager().build("evaluator", evaluator, options))
        if hardware is not None:
            judge.set_hardware(hardware)
        capacity = max(1, int(judge.max_parallel))
    except BaseException:
        send("failed", traceback.format_exc())
        return
    send("ready", {"pid": os.getpid(), "capacity": capacity,
                   "gpus": next((v for n, v in env.items() if v), "")})
    pool = ThreadPoolExecutor(max_workers=capacity, thread_name_prefix="geak-judge")
    stops: dict[int, threading.Event] = {}

    def answer(rid: int, work: Callable[[], Any]) -> None:
        try:
            send("result", rid, True, work())
        except BaseException:
            send("result", rid, False, traceback.format_exc())

    def batch(bid: int, items: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> None:
        stop = stops[bid]
        jobs = [(i, EvalJob(Task.from_dict(t), Candidate.from_dict(c))) for i, t, c in items]
        by_object = {id(job): index for index, job in jobs}
        by_name = {(job.task.key, job.candidate.id): index for index, job in jobs}
        results: Any = None
        try:
            results = judge.evaluate_many([job for _, job in jobs])
            for job, result in results:
                index = by_object.get(id(job), by_name.get((job.task.key, job.candidate.id)))
                send("item", bid, index, result.to_dict())
                if stop.is_set():
                    break
        except BaseException:
            send("batch_failed", bid, traceback.format_exc())
        finally:
            if isinstance(results, Generator):
                results.close()  # a generator left early: the evaluator starts nothing more
            stops.pop(bid, None)
            send("batch_done", bid)

    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            kind = message[0]
            if kind == "close":
                break
            if kind == "evaluate":
                _, rid, task, candidate = message
                pool.submit(answer, rid, lambda t=task, c=candidate: judge.evaluate(
                    Task.from_dict(t), Candidate.from_dict(c)).to_dict())
            elif kind == "judging":
                threading.Thread(target=answer, args=(message[1], lambda: [
                    list(item) for item in judge.judging()]), daemon=True).start()
            elif kind == "costs":
                _, rid, tasks = message
                threading.Thread(target=answer, args=(rid, lambda ts=tasks: expected_costs(
                    judge, [Task.from_dict(t) for t in ts])), daemon=True).start()
            elif kind == "profile":
                _, rid, task, candidate, profiler, seconds, options = message
                pool.submit(answer, rid, lambda t=task, c=candidate, p=profiler, s=seconds, o=options: judge.profile(
                    Task.from_dict(t), Candidate.from_dict(c), p, s, **o).to_dict())
            elif kind == "unmet":
                _, rid, task = message
                threading.Thread(target=answer, args=(rid, lambda t=task: list(
                    judge.unmet_requirements(Task.from_dict(t)))), daemon=True).start()
            elif kind == "hardware":
                judge.set_hardware(message[1])
            elif kind == "batch":
                _, bid, items = message
                stops[bid] = threading.Event()
                threading.Thread(target=batch, args=(bid, items), name="geak-judge-batch", daemon=True).start()
            elif kind == "stop":
                event = stops.get(message[1])
                if event is not None:
                    event.set()
    finally:
        for event in list(stops.values()):
            event.set()
        stop_running_jobs(refuse_new=True)  # closed mid-batch (Ctrl-C): children in flight end now
        judge.close()
        pool.shutdown(wait=False, cancel_futures=True)


def expected_costs(judge: EvaluatorBase, tasks: list[Task]) -> dict[str, float]:
    """Each task's expected cost (seconds, for ordering only) as ``judge`` guesses it (the
    evaluator's optional ``expected_costs``); none where it cannot tell."""
    try:
        return {str(k): float(v) for k, v in dict(judge.expected_costs(tasks)).items()}
    except Exception:
        return {}


# -- the calling process's side ---------------------------------------------------------------


@dataclass
class _Judge:
    index: int
    process: Any
    conn: Any
    capacity: int
    info: dict[str, Any]
    env: dict[str, str]
    in_flight: int = 0
    assigned: int = 0  # jobs of the running batches not yet answered
    alive: bool = True
    tasks: set[str] = field(default_factory=set)
    waiting: dict[int, Future[Any]] = field(default_factory=dict)
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def label(self) -> str:
        gpus = self.info.get("gpus")
        return f"judge process {self.index} (pid {self.info.get('pid', '?')}, {'GPU ' + gpus if gpus else 'CPU'})"

    def send(self, *message: Any) -> bool:
        """Send ``message``; False where the process is gone (its pipe closed)."""
        with self.send_lock:
            try:
                self.conn.send(message)
            except OSError:
                return False
        return True


@dataclass
class _Batch:
    """One ``evaluate_many`` call: its jobs by number, who holds each, and what came back."""

    jobs: dict[int, EvalJob]
    tries: dict[int, int]
    pending: dict[str, list[int]] = field(default_factory=dict)  # task key -> jobs not handed out
    out: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)
    holders: dict[int, tuple[_Judge, list[int]]] = field(default_factory=dict)  # sub-batch id -> who, which
    answered: set[int] = field(default_factory=set)
    stopped: bool = False


class ProcessJudges(EvaluatorBase):
    """The ``Evaluator`` of the ``local`` executor with ``judges`` other than 1."""

    def __init__(self, spec: ComponentSpec, options: Any, envs: list[dict[str, str]],
                 max_attempts: int = 3, start_timeout_s: float = 300.0) -> None:
        self._spec, self._options = spec, options
        self._max_attempts, self._start_timeout_s = max_attempts, start_timeout_s
        self._load_plugins = os.environ.get(LOAD_ENV)
        self._hardware: Any = None
        self._context = multiprocessing.get_context("spawn")
        self._cond = threading.Condition()
        self._judges: list[_Judge] = []
        self._starting = 0
        self._next_id = 0
        self._closed = False
        self._batches: dict[int, _Batch] = {}
        self._unmet: dict[str, list[str]] = {}
        started: list[_Judge] = []
        pending: list[tuple[int, dict[str, str], Any, Any]] = []
        try:
            for index, env in enumerate(envs):
                pending.append(self._spawn(index, env))
            for index, env, process, conn in pending:
                started.append(self._await_ready(index, env, process, conn))
        except BaseException:
            self._closed = True  # the processes that did start are not replaced, only ended
            for _, _, process, _ in pending:
                self._terminate(process)
            raise
        self._judges = started
        self._next_index = len(envs)
        log.info("%d judge processes: %s", len(started), "; ".join(j.label for j in started))

    # -- processes ------------------------------------------------------------------------

    def _spawn(self, index: int, env: dict[str, str]) -> tuple[int, dict[str, str], Any, Any]:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=serve, name=f"geak-judge-{index}",
            args=(child, self._spec.name, self._options, self._load_plugins, self._hardware, env))
        process.start()
        child.close()
        return index, env, process, parent

    def _await_ready(self, index: int, env: dict[str, str], process: Any, conn: Any) -> _Judge:
        if not conn.poll(self._start_timeout_s):
            self._terminate(process)
            raise GeakError(f"judge process {index} did not start within {self._start_timeout_s:g} s")
        try:
            message = conn.recv()
        except (EOFError, OSError) as exc:
            raise GeakError(f"judge process {index} ended while starting (exit code "
                            f"{process.exitcode})") from exc
        if message[0] != "ready":
            self._terminate(process)
            raise GeakError(f"judge process {index} could not build the evaluator {self._spec.name!r}:\n"
                            f"{message[1]}")
        info = message[1]
        judge = _Judge(index, process, conn, max(1, int(info.get("capacity", 1))), info, env)
        threading.Thread(target=self._read, args=(judge,), name=f"geak-judge-read-{index}", daemon=True).start()
        return judge

    @staticmethod
    def _terminate(process: Any) -> None:
        if process.is_alive():
            process.terminate()
            process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)

    def _read(self, judge: _Judge) -> None:
        while True:
            try:
                message = judge.conn.recv()
            except (EOFError, OSError):
                break
            kind = message[0]
            if kind == "result":
                _, rid, ok, payload = message
                with self._cond:
                    future = judge.waiting.pop(rid, None)
                if future is not None:
                    if ok:
                        future.set_result(payload)
                    else:
                        future.set_exception(GeakError(f"{judge.label} failed:\n{payload}"))
            elif kind in ("item", "batch_failed", "batch_done"):
                self._batch_message(judge, kind, message[1], message[2:])
        self._lose(judge)

    def _lose(self, judge: _Judge) -> None:
        with self._cond:
            if not judge.alive:
                return
            judge.alive = False
            waiting, judge.waiting = judge.waiting, {}
            lost_batches = [sub for sub, batch in self._batches.items() if batch.holders[sub][0] is judge]
            if not self._closed:
                self._starting += 1
            self._cond.notify_all()
        for future in waiting.values():
            future.set_exception(JudgeLost(f"{judge.label} ended (exit code {judge.process.exitcode})"))
        for sub in lost_batches:
            self._batch_message(judge, "lost", sub, ())
        if not self._closed:
            log.warning("%s ended (exit code %s); its jobs go to the others, and another starts",
                        judge.label, judge.process.exitcode)
            threading.Thread(target=self._replace, args=(judge,), name="geak-judge-replace", daemon=True).start()

    def _replace(self, lost: _Judge) -> None:
        judge = None
        try:
            with self._cond:
                index = self._next_index
                self._next_index += 1
            if not self._closed:
                judge = self._await_ready(*self._spawn(index, lost.env))
        except Exception as exc:
            log.warning("no judge process could be started in place of a lost one: %s", exc)
        with self._cond:
            self._starting -= 1
            if judge is not None and not self._closed:
                self._judges.append(judge)
            elif judge is not None:
                judge.send("close")
            self._cond.notify_all()

    def _live(self) -> list[_Judge]:
        return [j for j in self._judges if j.alive]

    def _wait_for_a_judge(self) -> list[_Judge]:
        """The live judges (waits while one is being started and none is alive)."""
        with self._cond:
            while not self._closed:
                live = self._live()
                if live or not self._starting:
                    return live
                self._cond.wait()
            return []

    # -- single jobs ----------------------------------------------------------------------

    def _ask(self, judge: _Judge, kind: str, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            rid = self._next_id
            self._next_id += 1
            judge.waiting[rid] = future
        if not judge.send(kind, rid, *args):
            self._lose(judge)
        return future

    def _acquire(self, task_key: str) -> _Judge | None:
        with self._cond:
            while not self._closed:
                live = self._live()
                free = [j for j in live if j.in_flight < j.capacity]
                if free:
                    judge = min(free, key=lambda j: (task_key not in j.tasks, j.in_flight / j.capacity, j.index))
                    judge.in_flight += 1
                    return judge
                if not live and not self._starting:
                    return None
                self._cond.wait()
            return None

    def _release(self, judge: _Judge, task_key: str, judged: bool) -> None:
        with self._cond:
            judge.in_flight -= 1
            if judged:
                judge.tasks.add(task_key)
            self._cond.notify_all()

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        started = time.monotonic()
        lost: list[str] = []
        while len(lost) < self._max_attempts:
            judge = self._acquire(task.key)
            if judge is None:
                lost.append("no judge process is left")
                break
            judged = False
            try:
                data = self._ask(judge, "evaluate", task.to_dict(), candidate.to_dict()).result()
                judged = True
                return EvalResult.from_dict(data)
            except JudgeLost as exc:
                lost.append(str(exc))
            finally:
                self._release(judge, task.key, judged)
        return _lost_verdict(task, candidate, lost, time.monotonic() - started)

    def profile(self, task: Task, candidate: Candidate, profiler: ProfilerBase, seconds: float, *,
                case: str = "", calls: int = 1) -> ProfileRecord:
        """Profile in the judge process that judged ``task`` before (else the one with the most
        room), as ``evaluate`` sends a job: ``profiler`` travels pickled (a plain class with
        its options dataclass). A process lost meanwhile is the record's ``error``."""
        judge = self._acquire(task.key)
        if judge is None:
            return ProfileRecord(profiler.profiler_name, candidate.id, case=case, calls=calls,
                                 error="no judge process is left")
        try:
            data = self._ask(judge, "profile", task.to_dict(), candidate.to_dict(), profiler, seconds,
                             {"case": case, "calls": calls}).result()
            return ProfileRecord.from_dict(data)
        except (JudgeLost, GeakError) as exc:  # lost, or a traceback whose last line says what
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            return ProfileRecord(profiler.profiler_name, candidate.id, case=case, calls=calls,
                                 error=f"the judge process could not profile: {why}")
        finally:
            self._release(judge, task.key, False)

    # -- batches --------------------------------------------------------------------------

    def evaluate_many(self, jobs: Iterable[EvalJob],
                      may_start: Callable[[], bool] | None = None) -> Iterator[tuple[EvalJob, EvalResult]]:
        """Judge ``jobs``, handed to the judge processes as they have room (see the module's
        docstring), yielding as each finishes. With ``may_start``: once it answers False
        nothing more is handed out and the processes are told to stop; each ends its pieces
        at its next verdict (what is in flight then finishes)."""
        listed = list(jobs)
        if not listed:
            return
        batch = _Batch(dict(enumerate(listed)), {i: 0 for i in range(len(listed))})
        try:
            if may_start is not None and not may_start():
                return
            for key in self._costliest_first(listed):
                batch.pending[key] = []
            for index, job in batch.jobs.items():
                batch.pending[job.task.key].append(index)
            self._dispatch(batch)
            while len(batch.answered) < len(batch.jobs):
                if may_start is not None and not batch.stopped and not may_start():
                    self._stop(batch)
                try:
                    kind, payload = batch.out.get(timeout=0.5)
                except queue.Empty:
                    if batch.stopped and not batch.holders:
                        break
                    if not batch.stopped and batch.pending:
                        self._dispatch(batch)  # a judge process started in place of a lost one
                    continue
                if kind == "verdict":
                    index, result = payload
                    if not batch.stopped and batch.pending:
                        self._dispatch(batch)  # room freed: hand out more before the caller's turn
                    yield batch.jobs[index], result
                elif kind == "resend":
                    if batch.stopped:
                        continue
                    for index in payload:  # ahead of the rest of its task
                        batch.pending.setdefault(batch.jobs[index].task.key, []).insert(0, index)
                    self._dispatch(batch)
        finally:
            with self._cond:
                for key in [k for k, b in self._batches.items() if b is batch]:
                    del self._batches[key]
                holders = list(batch.holders.items())
                for _, (judge, members) in holders:  # what they still hold is no longer counted
                    judge.assigned -= sum(1 for i in members if i not in batch.answered)
                batch.holders.clear()
                batch.pending.clear()
            for sub, (judge, _) in holders:
                judge.send("stop", sub)

    def _costliest_first(self, jobs: list[EvalJob]) -> list[str]:
        """The task keys of ``jobs``, the costliest first as a judge process expects them
        (their order in ``jobs`` among equals, and where no process can tell)."""
        tasks: dict[str, Task] = {}
        for job in jobs:
            tasks.setdefault(job.task.key, job.task)
        costs: dict[str, float] = {}
        live = self._wait_for_a_judge()
        if len(tasks) > 1 and live:
            try:
                costs = dict(self._ask(live[0], "costs", [t.to_dict() for t in tasks.values()])
                             .result(timeout=60))
            except Exception:  # lost, slow or unable: the given order
                costs = {}
        return sorted(tasks, key=lambda key: -float(costs.get(key, 0.0)))

    def _stop(self, batch: _Batch) -> None:
        batch.stopped = True
        for sub, (judge, _) in list(batch.holders.items()):
            judge.send("stop", sub)

    def _dispatch(self, batch: _Batch) -> None:
        """Hand out what ``batch`` still holds back, as far as the live judge processes have
        room (``ROOM_PER_SLOT`` jobs a slot, counting every batch's): first each process's
        own tasks' jobs and the tasks no process holds, the least loaded process first; then,
        to a process with a free slot and nothing else, half of what waits of the task with
        the most waiting (its reference then runs there too)."""
        live = self._wait_for_a_judge()
        if not live:
            for key in list(batch.pending):
                for index in batch.pending.pop(key):
                    self._give_up(batch, index, "no judge process is left")
            return
        parts: dict[int, list[int]] = {}
        with self._cond:
            if batch.stopped:
                return

            def room(judge: _Judge) -> int:
                return ROOM_PER_SLOT * judge.capacity - judge.assigned

            def take(judge: _Judge, key: str, count: int) -> int:
                members = batch.pending[key][:count]
                del batch.pending[key][:count]
                if not batch.pending[key]:
                    del batch.pending[key]
                judge.assigned += len(members)
                judge.tasks.add(key)
                parts.setdefault(judge.index, []).extend(members)
                return len(members)

            def least_loaded() -> list[_Judge]:
                return sorted(live, key=lambda j: (j.assigned / j.capacity, j.index))

            held = set().union(*(j.tasks for j in live))
            waiting = sum(len(members) for members in batch.pending.values())
            progress = True
            while batch.pending and progress:
                progress = False
                for judge in least_loaded():
                    key = next((k for k in batch.pending if k in judge.tasks), None)
                    if key is None:
                        key = next((k for k in batch.pending if k not in held), None)
                    # a busy process takes work a few jobs at a time (half its slots), so that
                    # what it is handed spans several tasks and its judge computes their
                    # references ahead of their candidates (a piece of one job never does)
                    if key is None or room(judge) <= 0 or (
                            judge.index not in parts and judge.assigned >= judge.capacity
                            and room(judge) < min(max(1, judge.capacity // 2), waiting)):
                        continue
                    held.add(key)
                    waiting -= take(judge, key, room(judge))
                    progress = True
            for judge in least_loaded():
                if not batch.pending or judge.assigned >= judge.capacity:
                    continue
                key = max(batch.pending, key=lambda k: len(batch.pending[k]))
                take(judge, key, min(room(judge), -(-len(batch.pending[key]) // 2)))
        for judge in live:
            members = parts.get(judge.index)
            if not members:
                continue
            with self._cond:
                sub = self._next_id
                self._next_id += 1
                batch.holders[sub] = (judge, members)
                self._batches[sub] = batch
            for index in members:
                batch.tries[index] += 1
            items = [(i, batch.jobs[i].task.to_dict(), batch.jobs[i].candidate.to_dict()) for i in members]
            if not judge.send("batch", sub, items):
                self._lose(judge)

    def _batch_message(self, judge: _Judge, kind: str, sub: int, rest: tuple[Any, ...]) -> None:
        with self._cond:
            batch = self._batches.get(sub)
            holder = batch.holders.get(sub) if batch is not None else None
        if batch is None or holder is None:
            return
        if kind == "item":
            index, data = rest
            with self._cond:
                judge.assigned -= 1
                batch.answered.add(index)
            batch.out.put(("verdict", (index, EvalResult.from_dict(data))))
            return
        if kind == "batch_failed":
            log.warning("%s failed on a batch:\n%s", judge.label, rest[0])
            return
        # batch_done, or lost: whatever the holder did not answer goes elsewhere (or gives up)
        with self._cond:
            batch.holders.pop(sub, None)
            self._batches.pop(sub, None)
            left = [i for i in holder[1] if i not in batch.answered]
            judge.assigned -= len(left)
        if not left:
            return
        why = (f"{judge.label} ended (exit code {judge.process.exitcode})" if kind == "lost"
               else f"{judge.label} returned no verdict for it")
        again = []
        for index in left:
            if batch.stopped:
                with self._cond:
                    batch.answered.add(index)  # not judged: the caller stopped the batch
            elif batch.tries[index] >= self._max_attempts:
                self._give_up(batch, index, why)
            else:
                again.append(index)
        if again:
            batch.out.put(("resend", again))

    def _give_up(self, batch: _Batch, index: int, why: str) -> None:
        job = batch.jobs[index]
        with self._cond:
            batch.answered.add(index)
        batch.out.put(("verdict", (index, _lost_verdict(job.task, job.candidate, [why], 0.0))))

    # -- the rest of the Evaluator protocol ------------------------------------------------------

    @property
    def max_parallel(self) -> int:
        with self._cond:
            return max(1, sum(j.capacity for j in self._live()))

    def set_hardware(self, profile: Any) -> None:
        self._hardware = profile
        for judge in self._live():
            if not judge.send("hardware", profile):
                self._lose(judge)

    def judging(self) -> list[tuple[str, str, float]]:
        """What the judge processes are judging now, longest first (each asked, 2 s at most)."""
        asked = [self._ask(judge, "judging") for judge in self._live()]
        items: list[tuple[str, str, float]] = []
        for future in asked:
            try:
                items.extend((str(t), str(c), float(s)) for t, c, s in future.result(timeout=2))
            except Exception:  # a busy or lost judge: the progress line goes without it
                continue
        return sorted(items, key=lambda item: -item[2])

    def unmet_requirements(self, task: Task) -> list[str]:
        if task.key not in self._unmet:
            for _ in range(self._max_attempts):
                live = self._wait_for_a_judge()
                if not live:
                    return ["no judge process is left"]
                try:
                    self._unmet[task.key] = list(self._ask(live[0], "unmet", task.to_dict()).result())
                    break
                except JudgeLost:
                    continue
            else:
                return ["the judge processes ended while checking the task's requirements"]
        return list(self._unmet[task.key])

    def placement(self) -> list[dict[str, Any]]:
        """Each live judge process: index, pid, GPUs, capacity."""
        with self._cond:
            return [{**j.info, "index": j.index} for j in self._live()]

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            judges = list(self._judges)
            self._cond.notify_all()
        for judge in judges:
            judge.send("close")
        deadline = time.monotonic() + 60
        for judge in judges:
            judge.process.join(max(0.1, deadline - time.monotonic()))
            self._terminate(judge.process)


def _lost_verdict(task: Task, candidate: Candidate, lost: list[str], wall_s: float) -> EvalResult:
    return EvalResult(
        task_id=task.id, candidate_id=candidate.id, flags=["judge_error"],
        reason=(f"judge error: the candidate could not be judged ({len(lost)} "
                f"{'try' if len(lost) == 1 else 'tries'}; the last: {lost[-1].splitlines()[0] if lost else '-'})"),
        error="\n".join(lost), wall_s=wall_s)
