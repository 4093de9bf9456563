"""The driver's side: an evaluator that sends each job to a judge on the Ray cluster.

Each judge is a Ray actor (``judge.JudgeWorker``) holding the recipe's evaluator
on a worker, with ``gpus_per_judge`` whole GPUs reserved for it on a cluster
with GPUs (its candidates share them as the evaluator allows, and its timing
holds a GPU with nothing else of the cluster on it), or ``cpus_per_judge`` CPUs
on a cluster without. Judges are spread over the nodes.

A job goes to the judge with the most room (the lowest share of its
``max_parallel`` in use); among equals to one that has judged the task before,
whose reference outputs are cached. The calling thread waits for the verdict,
so the caller's own limits (the agent's slots, ``evaluate_many``'s threads)
bound what is in flight.

A worker that dies (killed, out of memory, its node gone) fails the calls in
flight on it with one of Ray's worker errors. Each such job is sent again to
another judge, up to ``max_attempts`` tries in all, and a new judge is started
in place of the lost one, wherever the cluster has room. Verdicts come back to
the driver only: the run store has one writer, the driver.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from geak_core.api.components import EvalJob, EvaluatorBase
from geak_core.api.errors import GeakError, OptionError
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.tasks import Task
from geak_core.engine.plugins import LOAD_ENV

from geak_executor_ray.cluster import Connection
from geak_executor_ray.judge import JudgeWorker
from geak_executor_ray.options import RayExecutorOptions

log = logging.getLogger(__name__)


class NoJudgeLeft(Exception):
    pass


@dataclass
class _Judge:
    index: int
    handle: Any
    capacity: int
    info: dict[str, Any]
    in_flight: int = 0
    alive: bool = True
    tasks: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        gpus = self.info.get("gpus") or []
        where = f"GPU {','.join(gpus)}" if gpus else "CPU"
        return f"judge {self.index} ({self.info.get('host', '?')} pid {self.info.get('pid', '?')}, {where})"


def _lost_worker_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors for a call whose worker (or node) went away, as opposed to an
    exception raised by the judge's own code (``RayTaskError``), which is re-raised."""
    names = ("RayActorError", "WorkerCrashedError", "NodeDiedError", "ObjectLostError",
             "OutOfMemoryError", "ActorUnschedulableError")
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))


def _first_error_line(exc: BaseException) -> str:
    """The exception at the bottom of a Ray error's text (what the judge's worker raised)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        if ":" in line and not line.startswith(("File ", "^", "~")):
            return line
    return lines[-1] if lines else type(exc).__name__


class RayJudges(EvaluatorBase):
    """The ``Evaluator`` the ray executor returns: ``evaluate`` and ``evaluate_many`` judge on
    the cluster; ``close`` stops the judges and the connection this evaluator opened."""

    def __init__(self, connection: Connection, evaluator: str, options: Any,
                 settings: RayExecutorOptions) -> None:
        self.connection = connection
        self.ray = connection.ray
        self.settings = settings
        self._evaluator = evaluator
        self._options = options
        self._load_plugins = os.environ.get(LOAD_ENV)
        self._hardware: Any = None
        self._cond = threading.Condition()
        self._judges: list[_Judge] = []
        self._starting = 0
        self._next = 0
        self._closed = False
        self._unmet: dict[str, list[str]] = {}
        self._tag = uuid.uuid4().hex[:8]
        self._lost = _lost_worker_errors(self.ray)
        self._actor = self.ray.remote(JudgeWorker)
        resources = connection.resources()
        has_gpus = resources.get("GPU", 0) >= 1
        self.gpus = settings.gpus_per_judge if has_gpus else 0
        count = settings.judges or int(resources.get("GPU", 0) // self.gpus if self.gpus
                                       else resources.get("CPU", 0) // settings.cpus_per_judge)
        if count < 1:
            raise OptionError("judges", f"the Ray cluster has no room for a judge: each asks for "
                              f"{self._asks()}, the cluster offers {_offer(resources)}",
                              "add nodes, lower cpus_per_judge, or set judges = N for a cluster "
                              "that adds nodes on demand")
        if not connection.can_grow and (count * self.gpus > resources.get("GPU", 0)
                                        or count * settings.cpus_per_judge > resources.get("CPU", 0)):
            raise OptionError("judges", f"{count} judges do not fit on this machine's private Ray "
                              f"instance: each asks for {self._asks()}, it has {_offer(resources)}",
                              "lower judges, or set judges = 0 for as many as fit")
        self._start(count, resources)

    # -- judges -------------------------------------------------------------

    def _asks(self) -> str:
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''} and " if self.gpus else ""
        return f"{gpus}{self.settings.cpus_per_judge:g} CPU"

    def _spawn(self, index: int) -> Any:
        return self._actor.options(
            name=f"geak-judge-{self._tag}-{index}", namespace=self.settings.namespace,
            num_cpus=self.settings.cpus_per_judge, num_gpus=self.gpus, max_restarts=0,
            scheduling_strategy="SPREAD",
        ).remote(self._evaluator, self._options, self._load_plugins, self._hardware, self.gpus > 0)

    def _ready(self, index: int, handle: Any, info: dict[str, Any]) -> _Judge:
        return _Judge(index, handle, max(1, int(info.get("capacity", 1))), info)

    def _start(self, count: int, resources: dict[str, float]) -> None:
        actors = {index: self._spawn(index) for index in range(count)}
        handles = {actor.describe.remote(): index for index, actor in actors.items()}
        self._next = count
        ready, pending = self.ray.wait(list(handles), num_returns=count,
                                       timeout=self.settings.start_timeout_s)
        try:
            if pending:
                raise OptionError(
                    "judges", f"only {len(ready)} of {count} judges could start on the Ray cluster "
                    f"within {self.settings.start_timeout_s:g} s (each asks for {self._asks()}; the "
                    f"cluster offers {_offer(resources)})",
                    "lower judges, or raise start_timeout_s for a cluster that adds nodes on demand")
            for ref in ready:
                index = handles[ref]
                try:
                    info = self.ray.get(ref)
                except self._lost as exc:
                    raise GeakError(f"a judge could not start on the Ray cluster: "
                                    f"{_first_error_line(exc)} (judges build the evaluator "
                                    f"{self._evaluator!r} from the plugins installed on the worker)"
                                    ) from exc
                self._judges.append(self._ready(index, actors[index], info))
        except BaseException:
            for handle in actors.values():
                self._kill(handle)
            raise
        self._judges.sort(key=lambda j: j.index)
        log.info("%d judges on the Ray cluster: %s", count, "; ".join(j.label for j in self._judges))

    def _kill(self, handle: Any) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except Exception:  # already gone
            pass

    def _replace(self) -> None:
        """Start a judge in place of a lost one (a background thread)."""
        with self._cond:
            index = self._next
            self._next += 1
        judge = handle = None
        try:
            if not self._closed:
                handle = self._spawn(index)
                info = self.ray.get(handle.describe.remote(), timeout=self.settings.start_timeout_s)
                judge = self._ready(index, handle, info)
        except Exception as exc:  # no room within start_timeout_s, or it failed to start
            log.warning("a judge could not be started in place of a lost one: %s", _first_error_line(exc))
            if handle is not None:
                self._kill(handle)
        with self._cond:
            self._starting -= 1
            if judge is not None and not self._closed:
                self._judges.append(judge)
                log.info("%s started in place of a lost judge", judge.label)
            elif judge is not None:
                self._kill(judge.handle)
            self._cond.notify_all()

    def _lose(self, judge: _Judge, exc: BaseException) -> None:
        with self._cond:
            if not judge.alive:
                return
            judge.alive = False
            self._starting += 1
            self._cond.notify_all()
        log.warning("%s was lost (%s); its jobs go to other judges", judge.label, type(exc).__name__)
        self._kill(judge.handle)
        threading.Thread(target=self._replace, name="geak-judge-replace", daemon=True).start()

    def _acquire(self, task_id: str, need_room: bool = True) -> _Judge:
        """The judge with the most room (waits while every judge is full or starting)."""
        with self._cond:
            while True:
                if self._closed:
                    raise NoJudgeLeft("the evaluator was closed")
                free = [j for j in self._judges if j.alive and (j.in_flight < j.capacity or not need_room)]
                if free:
                    judge = min(free, key=lambda j: (j.in_flight / j.capacity, task_id not in j.tasks,
                                                     j.index))
                    judge.in_flight += need_room
                    return judge
                if not self._starting and not any(j.alive for j in self._judges):
                    raise NoJudgeLeft("no judge is left on the Ray cluster (the lost ones could "
                                      "not be started again)")
                self._cond.wait()

    def _release(self, judge: _Judge, task_id: str, judged: bool) -> None:
        with self._cond:
            judge.in_flight -= 1
            if judged:
                judge.tasks.add(task_id)
            self._cond.notify_all()

    def placement(self) -> list[dict[str, Any]]:
        """Where each live judge runs: host, pid, node, GPUs, capacity, and its Ray handle."""
        with self._cond:
            return [{**j.info, "index": j.index, "handle": j.handle} for j in self._judges if j.alive]

    # -- the Evaluator protocol --------------------------------------------------

    @property
    def max_parallel(self) -> int:
        with self._cond:
            return max(1, sum(j.capacity for j in self._judges if j.alive))

    def set_hardware(self, profile: Any) -> None:
        self._hardware = profile
        for judge in [j for j in self._judges if j.alive]:
            try:
                self.ray.get(judge.handle.set_hardware.remote(profile))
            except self._lost as exc:
                self._lose(judge, exc)

    def unmet_requirements(self, task: Task) -> list[str]:
        if task.key not in self._unmet:
            for _ in range(self.settings.max_attempts):
                try:
                    judge = self._acquire(task.id, need_room=False)
                except NoJudgeLeft as exc:
                    return [str(exc)]
                try:
                    self._unmet[task.key] = list(self.ray.get(judge.handle.unmet_requirements.remote(
                        task.to_dict())))
                    break
                except self._lost as exc:
                    self._lose(judge, exc)
            else:
                return ["the judges' workers were lost while checking the task's requirements"]
        return list(self._unmet[task.key])

    def evaluate(self, task: Task, candidate: Candidate) -> EvalResult:
        started = time.monotonic()
        payload = (task.to_dict(), candidate.to_dict())
        lost: list[str] = []
        while len(lost) < self.settings.max_attempts:
            try:
                judge = self._acquire(task.id)
            except NoJudgeLeft as exc:
                lost.append(str(exc))
                break
            judged = False
            try:
                data = self.ray.get(judge.handle.evaluate.remote(*payload))
                judged = True
            except self._lost as exc:
                lost.append(f"{judge.label}: {type(exc).__name__}: {_first_error_line(exc)}")
                self._lose(judge, exc)
                continue
            finally:
                self._release(judge, task.id, judged)
            return EvalResult.from_dict(data)
        return EvalResult(
            task_id=task.id, candidate_id=candidate.id, flags=["judge_error"],
            reason=f"judge error: the candidate could not be judged on the Ray cluster "
                   f"({len(lost)} {'try' if len(lost) == 1 else 'tries'}; the last: "
                   f"{lost[-1].splitlines()[0] if lost else '-'})",
            error="\n".join(lost), wall_s=time.monotonic() - started)

    def evaluate_many(self, jobs: Iterable[EvalJob]) -> Iterator[tuple[EvalJob, EvalResult]]:
        """Judge ``jobs`` on the cluster (``max_parallel`` at once), yielding as each finishes."""
        jobs = list(jobs)
        if not jobs:
            return
        with ThreadPoolExecutor(max_workers=self.max_parallel, thread_name_prefix="geak-ray") as pool:
            pending = {pool.submit(self.evaluate, job.task, job.candidate): job for job in jobs}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield pending.pop(future), future.result()

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            judges = [j for j in self._judges if j.alive]
            self._cond.notify_all()
        closing = [j.handle.close.remote() for j in judges]
        try:
            self.ray.wait(closing, num_returns=len(closing), timeout=60)
        except Exception:  # a judge lost meanwhile: nothing left to close there
            pass
        for judge in judges:
            self._kill(judge.handle)
        self.connection.close()


def _offer(resources: dict[str, float]) -> str:
    return f"{resources.get('GPU', 0):g} GPU and {resources.get('CPU', 0):g} CPU"
