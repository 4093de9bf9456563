"""The local executor's judge processes (``[executor] judges``): the same verdicts as the judge
in this process, for a batch and for single jobs; a batch is handed out as the processes have
room, the costliest tasks first, and a process out of work takes over half of another's
waiting jobs; a judge process killed while it judges loses no verdict and another starts in
its place; a job out of tries is a judge error; GPUs are shared evenly; a judge process keeps
no credentials; one that cannot build its evaluator says why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from geak_core.api.components import EvalJob
from geak_core.api.errors import GeakError, OptionError
from geak_core.api.model import Candidate, EvalResult
from geak_core.engine.builtin import LocalExecutor, LocalExecutorOptions
from geak_core.engine.judge_processes import (
    ROOM_PER_SLOT,
    ProcessJudges,
    _Batch,
    _Judge,
    expected_costs,
    serve,
    shares,
)
from geak_core.engine.plugins import PluginManager

ROOT = Path(__file__).resolve().parents[2]


def _add_kernel(body: str) -> str:
    return (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
        "    mask = offs < n_elements\n" + body
    )


RIGHT = _add_kernel("    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask)"
                    " + tl.load(y_ptr + offs, mask=mask), mask=mask)\n")
CANDIDATES = {
    "right": RIGHT,
    "subtracts": _add_kernel("    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask)"
                             " - tl.load(y_ptr + offs, mask=mask), mask=mask)\n"),
    "unwritten": _add_kernel("    pass\n"),
    "monkeypatch": (ROOT / "tests" / "fixtures" / "cheats" / "add_monkeypatch.py").read_text(),
}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    return subprocess.run([sys.executable, "-m", "geak_core.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def _verdicts(path: Path) -> dict[str, tuple]:
    return {Path(r["candidate"]).name: (r["call_ok"], r["correct"], r["failed_stage"], tuple(sorted(r["flags"])))
            for r in json.loads(path.read_text())}


def _options():
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    return TritonEvaluatorOptions(mode="interpreter", workers=1)


def _judges(count: int, **settings) -> ProcessJudges:
    spec = PluginManager().spec("evaluator", "triton")
    return ProcessJudges(spec, _options(), shares("", [], count), **settings)


def _task():
    return PluginManager().build("suite", "rocm", None).get("test_add_kernel")


# -- without running a kernel ----------------------------------------------------------------


def test_gpus_are_shared_evenly_and_an_uneven_split_is_refused(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert shares("nvidia", ["0", "1", "2", "3"], 4) == [{"CUDA_VISIBLE_DEVICES": g} for g in "0123"]
    assert shares("nvidia", ["0", "1", "2", "3"], 2) == [{"CUDA_VISIBLE_DEVICES": "0,1"},
                                                         {"CUDA_VISIBLE_DEVICES": "2,3"}]
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "4,5")
    assert shares("amd", ["4", "5"], 2) == [{"HIP_VISIBLE_DEVICES": "4"}, {"HIP_VISIBLE_DEVICES": "5"}]
    with pytest.raises(OptionError, match="3 judge processes cannot share 4 GPUs evenly"):
        shares("nvidia", ["0", "1", "2", "3"], 3)
    # without GPUs every judge process sees none
    assert all(set(env.values()) == {""} for env in shares("", [], 2))


def test_the_judge_stays_in_this_process_with_one_judge_or_at_most_one_gpu():
    spec = PluginManager().spec("evaluator", "triton")
    options = _options()  # the interpreter: no GPU
    for judges in (0, 1):
        built = LocalExecutor(LocalExecutorOptions(judges=judges)).evaluator(spec, options)
        try:
            assert not isinstance(built, ProcessJudges)
        finally:
            built.close()
    with pytest.raises(ValueError, match="judges must be >= 0"):
        LocalExecutorOptions(judges=-1)


def test_a_judge_process_keeps_no_credentials(monkeypatch):
    """``serve`` run here with a stand-in pipe: what the evaluator sees of the environment."""
    seen: dict[str, str] = {}

    class Pipe:
        def __init__(self):
            self.sent = []

        def send(self, message):
            self.sent.append(message)

        def recv(self):
            seen.update(os.environ)
            return ("close",)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    pipe = Pipe()
    saved = dict(os.environ)
    try:  # serve changes the process it runs in, this one here: its environment, and it
        # refuses new sandbox jobs once closed
        serve(pipe, "triton", _options(), None, None, {"CUDA_VISIBLE_DEVICES": ""})
    finally:
        from geak_core.kit.sandbox import accept_new_jobs

        os.environ.clear()
        os.environ.update(saved)
        accept_new_jobs()
    assert pipe.sent[0][0] == "ready" and pipe.sent[0][1]["capacity"] == 1
    assert "OPENAI_API_KEY" not in seen and seen["PYTHONPATH"] == "/somewhere"
    assert seen["CUDA_VISIBLE_DEVICES"] == ""


def test_a_judge_process_that_cannot_build_its_evaluator_says_why():
    spec = PluginManager().spec("evaluator", "triton")
    spec = type(spec)(**{**spec.__dict__, "name": "nonexistent"})
    with pytest.raises(GeakError, match=r"judge process 0 could not build the evaluator 'nonexistent'"):
        ProcessJudges(spec, _options(), shares("", [], 1), start_timeout_s=120)


def test_a_profile_goes_to_a_judge_process_with_its_profiler_pickled_and_comes_back_as_a_record():
    """Both ends without a process: ``profile`` sends the profiler through a pipe that pickles
    what it carries, and ``serve`` answers a ``profile`` message with the evaluator's record
    (an unusable profiler: no child runs)."""
    import pickle

    from geak_core.api.components import ProfilerBase
    from geak_core.api.profiling import ProfileRecord
    from geak_core.engine.builtin import NoProfiler

    task = _task()
    candidate = Candidate("c", task.id, RIGHT)
    judges = _dispatcher([1])

    class Answering(_Pipe):
        def send(self, message):
            kind, rid, *rest = pickle.loads(pickle.dumps(message))
            super().send((kind, rid, *rest))
            profiler = rest[2]
            record = ProfileRecord(type(profiler).__name__, rest[1]["id"], case=rest[4]["case"], calls=rest[4]["calls"])
            judges._judges[0].waiting.pop(rid).set_result(record.to_dict())

    judges._judges[0].conn = Answering()
    record = judges.profile(task, candidate, NoProfiler(), 30.0, case="big", calls=2)
    assert record == ProfileRecord("NoProfiler", "c", case="big", calls=2)
    assert judges._judges[0].in_flight == 0

    class Unusable(ProfilerBase):
        profiler_name = "unusable"

        def unusable(self):
            return ["no counters here"]

    class Asking(_Pipe):
        """The judge process's end: asks for one profile, and closes once it is answered."""

        asked = False

        def recv(self):
            if not self.asked:
                self.asked = True
                return ("profile", 7, task.to_dict(), candidate.to_dict(), Unusable(), 30.0,
                        {"case": "", "calls": 1})
            deadline = time.monotonic() + 30
            while not any(m[0] == "result" for m in self.sent) and time.monotonic() < deadline:
                time.sleep(0.05)
            return ("close",)

    pipe_end = Asking()
    saved = dict(os.environ)
    try:
        serve(pipe_end, "triton", _options(), None, None, {"CUDA_VISIBLE_DEVICES": ""})
    finally:
        from geak_core.kit.sandbox import accept_new_jobs

        os.environ.clear()
        os.environ.update(saved)
        accept_new_jobs()
    answer = next(m for m in pipe_end.sent if m[0] == "result")
    assert answer[:3] == ("result", 7, True)
    assert ProfileRecord.from_dict(answer[3]).error == "no counters here"


# -- judging under the interpreter -------------------------------------------------------------


class _Pipe:
    """The calling process's end of a judge process's pipe: what was sent, nothing behind it."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, message: tuple) -> None:
        self.sent.append(message)


def _dispatcher(capacities: list[int]) -> ProcessJudges:
    """ProcessJudges over judge processes that are only pipes: what ``_dispatch`` hands out."""
    judges = object.__new__(ProcessJudges)
    judges._cond = threading.Condition()
    judges._starting, judges._next_id, judges._closed = 0, 0, False
    judges._batches, judges._max_attempts = {}, 3
    judges._judges = [_Judge(i, None, _Pipe(), c, {}, {}) for i, c in enumerate(capacities)]
    return judges


def _held(judges: ProcessJudges, batch: _Batch) -> dict[int, list[str]]:
    """Per judge process, the candidates of ``batch`` it holds and has not answered."""
    held: dict[int, list[str]] = {j.index: [] for j in judges._judges}
    for judge, members in batch.holders.values():
        held[judge.index] += [batch.jobs[i].candidate.id for i in members if i not in batch.answered]
    return held


def _answer(judges: ProcessJudges, batch: _Batch, candidate: str) -> None:
    """The judge process holding ``candidate`` sends its verdict."""
    for sub, (judge, members) in list(batch.holders.items()):
        for index in members:
            if batch.jobs[index].candidate.id == candidate:
                job = batch.jobs[index]
                verdict = EvalResult(task_id=job.task.id, candidate_id=candidate).to_dict()
                judges._batch_message(judge, "item", sub, (index, verdict))
                if all(i in batch.answered for i in members):
                    judges._batch_message(judge, "batch_done", sub, ())
                return
    raise AssertionError(f"{candidate} is held by no judge process")


def test_a_batch_is_handed_out_as_room_frees_and_an_idle_process_takes_half_of_what_waits():
    """Two processes of two slots (room for ROOM_PER_SLOT x 2 jobs each), a slow task of ten
    jobs and a quick one of two: each takes a task; once the quick one's process has answered,
    it takes half of what still waits of the slow task rather than stand idle."""
    suite = PluginManager().build("suite", "rocm", None)
    slow, quick = suite.get("softmax"), suite.get("test_add_kernel")
    jobs = ([EvalJob(slow, Candidate(f"s{i}", slow.id, "")) for i in range(10)]
            + [EvalJob(quick, Candidate(f"q{i}", quick.id, "")) for i in range(2)])
    judges = _dispatcher([2, 2])
    batch = _Batch(dict(enumerate(jobs)), {i: 0 for i in range(len(jobs))})
    batch.pending = {slow.key: list(range(10)), quick.key: [10, 11]}  # the costliest first
    judges._dispatch(batch)
    room = ROOM_PER_SLOT * 2
    assert _held(judges, batch) == {0: [f"s{i}" for i in range(room)], 1: ["q0", "q1"]}
    assert sum(len(v) for v in batch.pending.values()) == 10 - room
    for name in ("q0", "q1"):
        _answer(judges, batch, name)
    judges._dispatch(batch)
    waiting = 10 - room
    taken = -(-waiting // 2)
    assert _held(judges, batch)[1] == [f"s{i}" for i in range(room, room + taken)]
    assert {j.index: j.tasks for j in judges._judges} == {0: {slow.key}, 1: {quick.key, slow.key}}
    _answer(judges, batch, "s0")  # room on process 0: more of its own task, and process 1,
    judges._dispatch(batch)       # which holds that task now too, fills its room with it
    assert _held(judges, batch)[0] == [f"s{i}" for i in range(1, room)] + [f"s{room + taken}"]
    assert _held(judges, batch)[1][-1] == f"s{room + taken + 1}"
    assert [j.assigned for j in judges._judges] == [room, room]
    assert sum(len(v) for v in batch.pending.values()) == 10 - room - taken - 2
    assert all(batch.tries[i] == 1 for i in batch.jobs if any(i in m for _, m in batch.holders.values()))


def test_a_process_never_holds_more_than_its_room_and_a_busy_one_takes_nothing_of_others():
    suite = PluginManager().build("suite", "rocm", None)
    tasks = [suite.get(t) for t in ("softmax", "test_add_kernel", "test_kernel_sub")]
    jobs = [EvalJob(t, Candidate(f"{t.id}-{i}", t.id, "")) for t in tasks for i in range(5)]
    judges = _dispatcher([1, 3])
    batch = _Batch(dict(enumerate(jobs)), {i: 0 for i in range(len(jobs))})
    for index, job in enumerate(jobs):
        batch.pending.setdefault(job.task.key, []).append(index)
    judges._dispatch(batch)
    assert [j.assigned for j in judges._judges] == [ROOM_PER_SLOT * 1, ROOM_PER_SLOT * 3]
    held = _held(judges, batch)
    # each process takes tasks whole while any is left that no process holds
    assert {c.rsplit("-", 1)[0] for c in held[0]} == {"softmax"}
    assert {c.rsplit("-", 1)[0] for c in held[1]} == {"test_add_kernel", "test_kernel_sub"}


def test_a_busy_process_takes_more_work_half_its_slots_at_a_time_and_across_tasks():
    """A process of eight slots, all busy: a freed slot or three bring it nothing; the fourth
    brings four jobs in one piece, spanning the tasks that wait (its judge then computes
    their references ahead of their candidates)."""
    suite = PluginManager().build("suite", "rocm", None)
    tasks = [suite.get(t) for t in ("softmax", "test_add_kernel", "test_kernel_sub", "layernorm")]
    jobs = [EvalJob(t, Candidate(f"{t.id}-{i}", t.id, "")) for t in tasks for i in range(6)]
    judges = _dispatcher([8])
    batch = _Batch(dict(enumerate(jobs)), {i: 0 for i in range(len(jobs))})
    for index, job in enumerate(jobs):
        batch.pending.setdefault(job.task.key, []).append(index)
    judges._dispatch(batch)
    judge = judges._judges[0]
    assert judge.assigned == ROOM_PER_SLOT * 8 and len(batch.holders) == 1
    held = _held(judges, batch)[0]
    for name in held[:3]:
        _answer(judges, batch, name)
        judges._dispatch(batch)
    assert judge.assigned == ROOM_PER_SLOT * 8 - 3 and len(batch.holders) == 1  # nothing new
    _answer(judges, batch, held[3])
    judges._dispatch(batch)
    assert judge.assigned == ROOM_PER_SLOT * 8 and len(batch.holders) == 2
    (_, piece), = [h for sub, h in batch.holders.items() if sub != min(batch.holders)]
    assert len(piece) == 4 and len({batch.jobs[i].task.key for i in piece}) == 2


def test_a_judge_process_tells_the_expected_costs_its_evaluator_knows():
    suite = PluginManager().build("suite", "rocm", None)
    tasks = [suite.get("softmax"), suite.get("test_add_kernel")]
    assert expected_costs(object(), tasks) == {}  # an evaluator without the method

    class Raises:
        def expected_costs(self, tasks):
            raise RuntimeError("no device")

    assert expected_costs(Raises(), tasks) == {}
    from geak_evaluator_triton.evaluator import TritonEvaluator

    costs = expected_costs(TritonEvaluator(_options()), tasks)
    assert set(costs) == {t.key for t in tasks} and all(v > 0 for v in costs.values())


@pytest.mark.slow
def test_eval_with_judge_processes_gives_the_local_verdicts(tmp_path):
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name, code in CANDIDATES.items():
        (folder / f"test_add_kernel__{name}.py").write_text(code)
    base = ["eval", "--suite", "rocm", str(folder), "--workers", "1"]
    local = _cli(*base, "--out", str(tmp_path / "local.json"), "--executor-option", "judges=1", cwd=tmp_path)
    assert local.returncode == 0, local.stdout + local.stderr
    split = _cli(*base, "--out", str(tmp_path / "split.json"), "--executor-option", "judges=2", cwd=tmp_path)
    assert split.returncode == 0, split.stdout + split.stderr
    verdicts = _verdicts(tmp_path / "split.json")
    assert verdicts == _verdicts(tmp_path / "local.json") and len(verdicts) == len(CANDIDATES)
    outcomes = {name.split("__")[1][:-3]: v[:3] for name, v in verdicts.items()}
    assert outcomes["right"] == (True, True, None)
    assert outcomes["subtracts"] == (True, False, "stage1")
    assert outcomes["monkeypatch"][1] is False


@pytest.mark.slow
def test_a_batch_is_split_by_task_and_single_jobs_go_where_their_task_was_judged():
    task = _task()
    other = PluginManager().build("suite", "rocm", None).get("test_kernel_sub")
    judges = _judges(2)
    try:
        jobs = [EvalJob(task, Candidate("right", task.id, RIGHT)),
                EvalJob(task, Candidate("again", task.id, RIGHT)),
                EvalJob(other, Candidate("sub", other.id, Path(other.reference).read_text()))]
        results = {job.candidate.id: result for job, result in judges.evaluate_many(jobs)}
        assert sorted(results) == ["again", "right", "sub"]
        assert all(r.correct for r in results.values()), {k: r.reason for k, r in results.items()}
        holders = {frozenset(j.tasks) for j in judges._live()}
        assert holders == {frozenset({task.key}), frozenset({other.key})}  # one task a process
        single = judges.evaluate(task, Candidate("single", task.id, RIGHT))
        assert single.correct
        assert judges.max_parallel == 2 and len(judges.placement()) == 2
    finally:
        judges.close()
    assert all(not j.process.is_alive() for j in judges._judges)


@pytest.mark.slow
def test_one_task_s_jobs_are_split_over_the_judges_when_tasks_are_fewer_than_judges():
    task = _task()
    judges = _judges(2)
    try:
        jobs = [EvalJob(task, Candidate(f"v{i}", task.id, RIGHT)) for i in range(4)]
        results = {job.candidate.id: result for job, result in judges.evaluate_many(jobs)}
        assert sorted(results) == ["v0", "v1", "v2", "v3"] and all(r.correct for r in results.values())
        assert [sorted(j.tasks) for j in judges._live()] == [[task.key], [task.key]]  # both judged it
        assert [j.assigned for j in judges._live()] == [0, 0]
    finally:
        judges.close()


def _kill_a_busy_judge(judges: ProcessJudges, done: threading.Event, timeout_s: float = 300) -> int | None:
    deadline = time.monotonic() + timeout_s
    while not done.is_set() and time.monotonic() < deadline:
        for judge in judges._live():
            if judge.in_flight or judge.assigned:
                os.kill(judge.process.pid, signal.SIGKILL)
                return judge.index
        time.sleep(0.05)
    return None


@pytest.mark.slow
def test_a_judge_process_killed_mid_batch_loses_no_verdict_and_another_starts():
    task = _task()
    judges = _judges(1)
    try:
        done = threading.Event()
        results: dict = {}

        def run() -> None:
            jobs = [EvalJob(task, Candidate(f"c{i}", task.id, RIGHT)) for i in range(2)]
            results.update({job.candidate.id: r for job, r in judges.evaluate_many(jobs)})
            done.set()

        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(1.0)  # the batch is sent
        assert _kill_a_busy_judge(judges, done) == 0
        thread.join(600)
        assert sorted(results) == ["c0", "c1"] and all(r.correct for r in results.values())
        assert [j["index"] for j in judges.placement()] == [1]  # started in place of the lost one
    finally:
        judges.close()


@pytest.mark.slow
def test_a_job_out_of_tries_is_a_judge_error():
    task = _task()
    judges = _judges(1, max_attempts=1)
    try:
        verdict: dict = {}
        done = threading.Event()

        def judge() -> None:
            verdict["first"] = judges.evaluate(task, Candidate("first", task.id, RIGHT))
            done.set()

        thread = threading.Thread(target=judge)
        thread.start()
        assert _kill_a_busy_judge(judges, done) == 0
        thread.join(600)
        first = verdict["first"]
        assert first.flags == ["judge_error"] and not first.call_ok
        assert first.reason.startswith("judge error: the candidate could not be judged (1 try; the last: "
                                       "judge process 0 (pid ")
        again = judges.evaluate(task, Candidate("again", task.id, RIGHT))  # the new process
        assert again.correct
    finally:
        judges.close()


@pytest.mark.slow
def test_a_batch_told_not_to_start_ends_without_judging():
    task = _task()
    judges = _judges(1)
    try:
        jobs = [EvalJob(task, Candidate(f"c{i}", task.id, RIGHT)) for i in range(3)]
        started = time.monotonic()
        assert list(judges.evaluate_many(jobs, may_start=lambda: False)) == []  # nothing sent
        answers = iter([True])  # sent, then stopped: what was in flight is all that comes back
        results = list(judges.evaluate_many(jobs, may_start=lambda: next(answers, False)))
        assert len(results) <= 1 and all(r.correct for _, r in results)
        assert time.monotonic() - started < 120
        assert [j.assigned for j in judges._live()] == [0]  # nothing left counted against it
    finally:
        judges.close()


@pytest.mark.slow
def test_ctrl_c_ends_eval_and_its_judge_processes_at_once(tmp_path):
    """A terminal's Ctrl-C reaches the whole foreground group: the judge processes leave the
    stopping to the calling process, whose close() ends them and their children."""
    folder = tmp_path / "candidates"
    folder.mkdir()
    (folder / "test_add_kernel__right.py").write_text(RIGHT)
    (folder / "test_add_kernel__spins.py").write_text(_add_kernel("    i = 0\n    while i >= 0:\n        i += 1\n"))
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    proc = subprocess.Popen([sys.executable, "-m", "geak_core.cli", "eval", "--suite", "rocm", str(folder),
                             "--workers", "1", "--timeout", "120", "--executor-option", "judges=2"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    time.sleep(20)  # the judge processes are up and the spinning candidate's child is stuck
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert time.monotonic() - sent < 40, out
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # no judge process of its session outlives it for long
        left = [line for line in subprocess.run(["ps", "-eo", "sid=,pid=,args="], capture_output=True,
                                                text=True).stdout.splitlines()
                if line.split()[0] == str(proc.pid)]
        if not left:
            break
        time.sleep(0.5)
    assert left == []
