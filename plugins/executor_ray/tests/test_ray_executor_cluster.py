"""The ray executor on a local cluster of CPU workers (Triton interpreter): the same verdicts as
a local run, for ``geak-core eval`` and for the quickstart; a worker killed while it judges
loses nothing; a stopped run resumes without judging again what it had judged; a judgement out
of tries is a judge error and a new judge takes the lost one's place; a judge that cannot start
says why."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from ray_support import QUICKSTART, ROOT, cli, only_run, ray_recipe, reason_class, run_verdicts

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")


def _add_kernel(body: str) -> str:
    return (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
        "    mask = offs < n_elements\n" + body
    )


CANDIDATES = {
    "right": _add_kernel("    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask)"
                         " + tl.load(y_ptr + offs, mask=mask), mask=mask)\n"),
    "subtracts": _add_kernel("    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask)"
                             " - tl.load(y_ptr + offs, mask=mask), mask=mask)\n"),
    "unwritten": _add_kernel("    pass\n"),
    "does_not_compile": _add_kernel("    tl.store(output_ptr + offs, tl.arange(0, n_elements),"
                                    " mask=mask)\n"),
    "monkeypatch": (ROOT / "tests" / "fixtures" / "cheats" / "add_monkeypatch.py").read_text(),
}


def _eval_records(path: Path) -> dict[str, tuple]:
    return {Path(r["candidate"]).name: (r["call_ok"], r["correct"], r["failed_stage"],
                                        tuple(sorted(r["flags"])), reason_class(r["reason"]))
            for r in json.loads(path.read_text())}


def test_a_directory_eval_on_the_cluster_gives_the_local_verdicts(ray_cluster, tmp_path):
    folder = tmp_path / "candidates"
    folder.mkdir()
    for name, code in CANDIDATES.items():
        (folder / f"test_add_kernel__{name}.py").write_text(code)
    base = ["eval", "--suite", "rocm", str(folder), "--workers", "1"]
    local = cli(*base, "--out", str(tmp_path / "local.json"), cwd=tmp_path)
    assert local.returncode == 0, local.stdout + local.stderr
    remote = cli(*base, "--out", str(tmp_path / "ray.json"), "--executor", "ray",
                 "--executor-option", f"address={ray_cluster}", "--executor-option", "judges=2",
                 cwd=tmp_path)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    verdicts = _eval_records(tmp_path / "ray.json")
    assert verdicts == _eval_records(tmp_path / "local.json")
    assert len(verdicts) == len(CANDIDATES)
    outcomes = {name.split("__")[1][:-3]: v[:3] for name, v in verdicts.items()}
    assert outcomes["right"] == (True, True, None)
    assert outcomes["subtracts"] == (True, False, "stage1")
    assert outcomes["does_not_compile"][:2] == (False, False)
    assert outcomes["monkeypatch"][1] is False
    summary_line = next(line for line in remote.stdout.splitlines() if line.startswith("call accuracy"))
    assert summary_line in local.stdout


def test_the_quickstart_on_the_cluster_gives_the_local_verdicts(ray_cluster, local_quickstart, tmp_path):
    proc = cli("run", str(ray_recipe(tmp_path, ray_cluster)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "execution accuracy 100.00%" in proc.stdout
    assert run_verdicts(only_run(tmp_path / "runs")) == local_quickstart
    assert len(local_quickstart) == 6


def _judges() -> list[tuple[str, object]]:
    found = []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["name"].startswith("geak-judge-"):
            found.append((entry["name"], ray.get_actor(entry["name"], namespace=entry["namespace"])))
    return found


def _kill_a_busy_judge(done: threading.Event, timeout_s: float = 300) -> dict | None:
    """SIGKILL the worker of the first judge seen with a judgement in flight."""
    deadline = time.monotonic() + timeout_s
    while not done.is_set() and time.monotonic() < deadline:
        for name, handle in _judges():
            try:
                status = ray.get(handle.status.remote(), timeout=5)
            except Exception:  # a judge that is going away
                continue
            if status["in_flight"]:
                os.kill(status["pid"], signal.SIGKILL)
                return {"name": name, **status}
        time.sleep(0.05)
    return None


def test_a_judge_killed_mid_run_loses_no_verdict(ray_cluster, local_quickstart, tmp_path, monkeypatch):
    from geak_core.engine.agent import run_recipe
    from geak_core.engine.plugins import PluginManager
    from geak_core.engine.recipe import load_recipe
    from geak_llm_replay.backend import ReplayBackend

    # LLM calls stay on the driver, within the recipe's limit of one at a time.
    calls = {"now": 0, "peak": 0}
    lock = threading.Lock()
    complete = ReplayBackend.complete

    def counted(self, request):
        with lock:
            calls["now"] += 1
            calls["peak"] = max(calls["peak"], calls["now"])
        try:
            time.sleep(0.2)
            return complete(self, request)
        finally:
            with lock:
                calls["now"] -= 1

    monkeypatch.setattr(ReplayBackend, "complete", counted)
    path = ray_recipe(tmp_path, ray_cluster)
    path.write_text(path.read_text() + '\n[llm]\nmax_concurrency = 1\n')
    plugins = PluginManager()
    recipe = load_recipe(path, plugins)
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["summary"] = run_recipe(recipe, plugins, echo=lambda line: None)
        except BaseException as exc:  # reported by the assertions below
            outcome["error"] = exc
        finally:
            done.set()

    runner = threading.Thread(target=run)
    runner.start()
    killed = _kill_a_busy_judge(done)
    runner.join(600)
    assert "error" not in outcome, outcome.get("error")
    assert killed is not None, "no judge was seen judging"
    summary = outcome["summary"]
    assert summary.status == "finished" and summary.execution_accuracy == 1.0
    run_dir = only_run(tmp_path / "runs")
    assert run_verdicts(run_dir) == local_quickstart  # every candidate, the local verdict
    db = sqlite3.connect(run_dir / "store.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (candidates,) = db.execute("SELECT COUNT(*) FROM candidates").fetchone()
        (evaluations,) = db.execute("SELECT COUNT(*) FROM evaluations").fetchone()
        (judge_errors,) = db.execute(
            "SELECT COUNT(*) FROM evaluations WHERE result LIKE '%judge_error%'").fetchone()
    finally:
        db.close()
    assert candidates == evaluations == 6 and judge_errors == 0  # each judged once, no retry recorded
    assert calls["peak"] == 1
    live = [name for name, _ in _judges()]
    assert killed["name"] not in live  # the killed judge stays dead: its job went elsewhere


def test_a_stopped_run_resumes_on_the_cluster_without_judging_twice(ray_cluster, local_quickstart,
                                                                     tmp_path, monkeypatch):
    from geak_core.engine.agent import run_recipe
    from geak_core.engine.plugins import PluginManager
    from geak_core.engine.recipe import load_recipe
    from geak_executor_ray.judges import RayJudges

    sent: list[str] = []
    evaluate = RayJudges.evaluate

    def counted(self, task, candidate):
        sent.append(candidate.id)
        return evaluate(self, task, candidate)

    monkeypatch.setattr(RayJudges, "evaluate", counted)
    path = ray_recipe(tmp_path, ray_cluster, run="max_llm_calls = 1")
    path.write_text(path.read_text().replace(f'include = "{QUICKSTART}"',
                                             f'include = "{QUICKSTART}"\n\n[suite]\nname = "rocm"\n'
                                             f'tasks = ["test_add_kernel"]'))
    plugins = PluginManager()
    stopped = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    assert stopped.status == "budget_exhausted"
    assert sent == ["test_add_kernel/L0/I0"]
    path.write_text(path.read_text().replace("max_llm_calls = 1", "max_llm_calls = 10"))
    resumed = run_recipe(load_recipe(path, plugins), plugins, resume=stopped.run_id,
                         echo=lambda line: None)
    assert resumed.status == "finished" and resumed.execution_accuracy == 1.0
    assert sent == ["test_add_kernel/L0/I0", "test_add_kernel/L0/I1", "test_add_kernel/L0/I2"]
    expected = {k: v for k, v in local_quickstart.items() if k.startswith("test_add_kernel/")}
    assert run_verdicts(tmp_path / "runs" / stopped.run_id) == expected


def _judges_on(ray_cluster: str, evaluator: str, **settings):
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_executor_ray.cluster import Connection
    from geak_executor_ray.judges import RayJudges
    from geak_executor_ray.options import RayExecutorOptions

    options = RayExecutorOptions(address=ray_cluster, **settings)
    connection = Connection(options)
    connection.open()
    return RayJudges(connection, evaluator, TritonEvaluatorOptions(mode="interpreter", workers=1),
                     options)


def test_a_judge_that_cannot_start_reports_the_workers_error(ray_cluster):
    from geak_core.api.errors import GeakError

    with pytest.raises(GeakError, match=r"a judge could not start on the Ray cluster: .*no evaluator "
                                        r"named 'nonexistent' \(valid: 'triton'\)"):
        _judges_on(ray_cluster, "nonexistent", judges=1)
    assert ray.is_initialized()  # the test's own connection is left as it was
    assert _judges() == []


def test_a_judgement_out_of_tries_is_a_judge_error_and_a_new_judge_takes_over(ray_cluster):
    from geak_core.api.model import Candidate
    from geak_core.engine.plugins import PluginManager

    task = PluginManager().build("suite", "rocm", None).get("test_add_kernel")
    code = Path(task.reference).read_text()
    judges = _judges_on(ray_cluster, "triton", judges=1, max_attempts=1)
    try:
        verdict: dict = {}
        done = threading.Event()

        def judge() -> None:
            verdict["first"] = judges.evaluate(task, Candidate("first", task.id, code))
            done.set()

        thread = threading.Thread(target=judge)
        thread.start()
        assert _kill_a_busy_judge(done) is not None
        thread.join(300)
        first = verdict["first"]
        assert first.flags == ["judge_error"] and not first.call_ok
        assert first.reason.startswith("judge error: the candidate could not be judged on the Ray "
                                       "cluster (1 try; the last: judge 0 (")
        again = judges.evaluate(task, Candidate("again", task.id, code))  # waits for the new judge
        assert again.correct and again.flags == []
        assert [j["index"] for j in judges.placement()] == [1]
    finally:
        judges.close()
    assert _judges() == []
