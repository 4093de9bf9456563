"""The agent loop end to end: scripted replies over loopback HTTP through the real OpenAI
backend, candidates judged for real by the evaluator (Triton interpreter on the CPU)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from geak_core.api.errors import InputError
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.report import SCRIPTED_NOTE, format_summary
from geak_core.engine.store import RunStore, list_runs
from geak_core.kit.code_metrics import code_metrics

from tests.support.openai_server import OpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[2]

ADD_OK = """Strategy: one chunk per program.
```python
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
```
"""
ADD_OK_2 = ADD_OK.replace("one chunk per program", "same, with a named mask").replace(
    "mask = offs < n_elements", "mask = n_elements > offs"
)
ADD_WRONG = ADD_OK.replace("+ tl.load(y_ptr", "- tl.load(y_ptr").replace("one chunk", "subtract chunk")
ADD_WRONG_2 = ADD_OK.replace("+ tl.load(y_ptr", "* tl.load(y_ptr").replace("one chunk", "multiply chunk")
ADD_BROKEN = ADD_OK.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, n_elements)").replace(
    "one chunk", "whole range"
)


def purpose_of(request) -> str:
    user = request.body["messages"][-1]["content"]
    if "## Start over with a different strategy" in user:
        return "strategy"
    if "## What the judge reported" in user:
        return "reflect"
    if "## Correct versions so far" in user:
        return "optimize"
    return "generate"


class Script:
    """Replies chosen by the prompt's purpose, in order per purpose; records what was asked."""

    def __init__(self, **replies):
        self.replies = {k: list(v) for k, v in replies.items()}
        self.purposes: list[str] = []
        self.prompts: list[str] = []

    def __call__(self, request):
        purpose = purpose_of(request)
        self.purposes.append(purpose)
        self.prompts.append(request.body["messages"][-1]["content"])
        queue = self.replies.get(purpose) or []
        if not queue:
            return Reply.error(400, f"script has no more {purpose} replies")
        return queue.pop(0) if len(queue) > 1 else queue[0]


POLICY_KEYS = ("max_debug_attempts", "max_perf_debug_attempts")


def write_recipe(directory, base_url, *, optimizer="opro", seed=0, proposals=1, max_llm_calls=None, **agent):
    agent = {"lineages": 1, **agent}
    policy = {k: agent.pop(k) for k in POLICY_KEYS if k in agent}
    agent_lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in agent.items())
    policy_lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in policy.items())
    proposals_line = f"proposals = {proposals}" if optimizer else ""
    budget_line = f"max_llm_calls = {max_llm_calls}" if max_llm_calls is not None else ""
    text = textwrap.dedent(f"""
        [run]
        name = "loop-test"
        output_dir = "{directory / 'runs'}"
        seed = {seed}
        {budget_line}

        [llm]
        backend = "openai"
        model = "scripted-model"
        base_url = "{base_url}"
        max_retries = 0

        [suite]
        name = "rocm"
        tasks = ["test_add_kernel"]

        [optimizer]
        name = "{optimizer or 'none'}"
        {proposals_line}

        [policy]
        """) + policy_lines + "\n\n[agent]\n" + agent_lines + "\n"
    path = directory / "recipe.toml"
    path.write_text(text)
    return path


def run(tmp_path, script, *, optimizer="opro", server_options=None, **agent):
    with OpenAIServer(script, **(server_options or {})) as server:
        path = write_recipe(tmp_path, server.base_url, optimizer=optimizer, **agent)
        plugins = PluginManager()
        recipe = load_recipe(path, plugins)
        summary = run_recipe(recipe, plugins, echo=lambda line: None)
    return summary, RunStore(Path(recipe.run.output_dir) / summary.run_id)


def attempts(store):
    data = json.loads((store.dir / "tasks" / "test_add_kernel.json").read_text())
    return [(a["kind"], a["call_ok"], a["correct"]) for a in data["attempts"]]


def test_call_failure_is_reflected_on_then_the_correct_kernel_goes_to_the_optimizer(tmp_path):
    script = Script(generate=[ADD_BROKEN], reflect=[ADD_OK], optimize=[ADD_OK_2])
    summary, store = run(tmp_path, script, iterations=3)
    assert script.purposes == ["generate", "reflect", "optimize"]
    assert attempts(store) == [("generate", False, False), ("reflect", True, True), ("optimize", True, True)]
    assert "arange" in script.prompts[1] and "did not import, compile or run" in script.prompts[1]
    assert "tl.arange(0, BLOCK_SIZE)" in script.prompts[2]  # the archive shows the correct code
    assert summary.execution_accuracy == 1.0 and summary.status == "finished"
    counts = store.counts()
    assert (counts["llm_calls"], counts["candidates"], counts["evaluations"]) == (3, 3, 3)
    assert (store.dir / "best" / "test_add_kernel.py").exists()
    # the summary's code metrics are the best candidate's (untimed here: the first correct one)
    best = code_metrics((store.dir / "best" / "test_add_kernel.py").read_text())
    assert best.maintainability_index is not None
    assert summary.tasks[0].best_metrics == best.to_dict()
    assert summary.code_metrics == {"cc_mean": best.cc_mean, "maintainability_index": best.maintainability_index}
    row = next(line for line in format_summary(summary).splitlines() if line.startswith("test_add_kernel"))
    assert row.split()[-3:] == ["n/m", f"{best.cc_mean:.1f}", f"{best.maintainability_index:.1f}"]


def test_a_mismatch_is_reflected_on_and_no_optimizer_stops_at_the_first_correct(tmp_path):
    script = Script(generate=[ADD_WRONG], reflect=[ADD_OK])
    summary, store = run(tmp_path, script, optimizer=None, iterations=5)
    assert script.purposes == ["generate", "reflect"]
    assert "The module ran but its results are wrong" in script.prompts[1]
    assert "stage1" in script.prompts[1]
    assert summary.tasks[0].correct


def test_the_debugging_trap_restarts_with_a_fresh_strategy(tmp_path):
    script = Script(generate=[ADD_WRONG], reflect=[ADD_WRONG_2], strategy=[ADD_OK])
    summary, store = run(tmp_path, script, optimizer=None, iterations=4, max_debug_attempts=1)
    assert script.purposes == ["generate", "reflect", "strategy"]
    assert "multiply chunk" in script.prompts[2]  # the abandoned approach is named
    assert [a[0] for a in attempts(store)] == ["generate", "reflect", "restart", "restart"]
    assert [e["kind"] for e in store.iter_events("restart")] == ["restart"]
    assert summary.tasks[0].correct


def test_a_lineage_stops_after_patience_rounds_without_improvement(tmp_path):
    script = Script(generate=[ADD_OK], optimize=[ADD_OK_2])
    summary, store = run(tmp_path, script, iterations=6, patience=2)
    # round 0 improves (first correct); rounds 1 and 2 bring nothing new: stop.
    assert script.purposes == ["generate", "optimize", "optimize"]


def test_a_budget_stop_keeps_everything_and_resume_finishes_without_repeating(tmp_path):
    script = Script(generate=[ADD_BROKEN], reflect=[ADD_OK], optimize=[ADD_OK_2])
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=3, max_llm_calls=2)
        plugins = PluginManager()
        summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
        assert summary.status == "budget_exhausted" and "budget of 2" in summary.note
        assert len(server.requests) == 2
        path.write_text(path.read_text().replace("max_llm_calls = 2", "max_llm_calls = 10"))
        resumed = run_recipe(load_recipe(path, plugins), plugins, resume=summary.run_id, echo=lambda line: None)
        assert resumed.status == "finished"
        assert len(server.requests) == 3  # the two recorded calls were not made again
        assert script.purposes == ["generate", "reflect", "optimize"]
        store = RunStore(tmp_path / "runs" / summary.run_id)
        assert store.counts()["llm_calls"] == 3
        before = _rows(tmp_path / "runs" / summary.run_id)
        assert before["evaluations"] == before["candidates"] == 3
        for _ in range(2):  # resuming a finished run again and again adds no row
            said: list[str] = []
            again = run_recipe(load_recipe(path, plugins), plugins, resume=summary.run_id, echo=said.append)
            assert again.status == "finished"
            assert again.to_dict() == resumed.to_dict()  # the stored summary, as it was
            assert said[0].startswith(f"run {summary.run_id} is already finished; nothing to resume")
        assert len(server.requests) == 3
        assert _rows(tmp_path / "runs" / summary.run_id) == before
        with RunStore(tmp_path / "runs" / summary.run_id) as store:
            ended = [e["payload"]["status"] for e in store.iter_events("run_finished")]
            assert ended == ["budget_exhausted", "finished"]  # no second "finished"
            assert store.meta("status") == "finished"


def _cli(*args, cwd):
    env = {**os.environ}
    return subprocess.Popen([sys.executable, "-m", "geak_core.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _comparable(summary_path):
    data = json.loads(Path(summary_path).read_text())
    data.pop("run_id")
    for task in data["tasks"]:
        task.pop("best_file")
    return data


KILLED_RUN_REPLIES = dict(generate=[ADD_WRONG], reflect=[ADD_OK], optimize=[ADD_OK_2])


@pytest.fixture(scope="module")
def uninterrupted_run(tmp_path_factory):
    """The run never stopped that each killed-and-resumed one is compared with (one for the
    three kill points: the same recipe and replies)."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    with OpenAIServer(Script(**KILLED_RUN_REPLIES)) as server:
        path = write_recipe(folder, server.base_url, iterations=3)
        proc = _cli("run", str(path), cwd=folder)
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out
        (first,) = list((folder / "runs").iterdir())
    return first


@pytest.mark.parametrize("answered", [0, 1, 2])
def test_a_killed_run_resumes_to_the_same_summary_as_an_uninterrupted_one(tmp_path, answered, uninterrupted_run):
    """kill -9 while the first, second or third LLM request is in flight, then resume: the
    same summary and the same rows as a run never stopped, and only the unanswered calls
    asked again."""
    replies = KILLED_RUN_REPLIES
    purposes = ["generate", "reflect", "optimize"]
    first = uninterrupted_run

    # The same run, killed while request number `answered` + 1 is in flight, then resumed.
    in_flight = threading.Event()
    script = Script(**replies)

    def stalling(request):
        if len(script.purposes) == answered:
            in_flight.set()
            script(request)
            return Reply.stall(600, ADD_OK_2)
        return script(request)

    (tmp_path / "b").mkdir()
    with OpenAIServer(stalling) as server:
        path = write_recipe(tmp_path / "b", server.base_url, iterations=3)
        proc = _cli("run", str(path), cwd=tmp_path)
        assert in_flight.wait(300), f"the run never reached LLM call {answered + 1}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        (second,) = list((tmp_path / "b" / "runs").iterdir())
        assert RunStore(second).counts()["llm_calls"] == answered
        assert [row["status"] for row in list_runs(tmp_path / "b" / "runs")] == ["interrupted"]
    with OpenAIServer(Script(**replies)) as server:
        path.write_text(re.sub(r'base_url = ".*"', f'base_url = "{server.base_url}"', path.read_text()))
        proc = _cli("run", str(path), "--resume", second.name, cwd=tmp_path)
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out
        assert [purpose_of(r) for r in server.requests] == purposes[answered:]  # only the unrecorded calls
    assert _comparable(first / "summary.json") == _comparable(second / "summary.json")
    # and the same rows: a resume replays the recorded rounds without recording them again
    assert _rows(first) == _rows(second)


def _rows(run_dir):
    with RunStore(run_dir) as store:
        counts = store.counts()
        retrieved = sum(1 for _ in store.iter_events("retrieved"))
    return {"llm_calls": counts["llm_calls"], "candidates": counts["candidates"],
            "evaluations": counts["evaluations"], "retrieved": retrieved}


def test_the_quickstart_runs_offline_to_its_summary(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "run", str(ROOT / "recipes" / "quickstart.toml"),
         "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if "KEY" not in k},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "[test_add_kernel] L0 I0 generate -> run:" in out  # the failing first attempt
    assert "[softmax] L0 I0 generate -> stage2:" in out  # caught only by the outlier stage
    assert "L0 I1 reflect  -> correct" in out and "L0 I2 optimize -> correct" in out
    assert "execution accuracy 100.00%" in out
    assert f"run stored in {tmp_path}" in out


def test_the_ablation_command_runs_the_four_recipes_and_prints_one_table(tmp_path):
    folder = ROOT / "recipes" / "ablations"
    names = ["0-direct", "1-knowledge", "2-knowledge-oneshot", "3-full"]
    proc = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "ablation", *[str(folder / f"{n}.toml") for n in names],
         "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    header = next(i for i, line in enumerate(proc.stdout.splitlines()) if line.startswith("recipe ") and "exec acc" in line)
    table = proc.stdout.splitlines()[header + 1:]
    table = table[: table.index("")] if "" in table else table
    rows = [line for line in table if line.split() and line.split()[0] in names]
    assert [r.split()[0] for r in rows] == names
    # the direct baseline makes one call, whose scripted reply fails; the loop's variants fix it
    assert rows[0].split()[2:4] == ["0.00%", "0.00%"]
    assert all(r.split()[3] == "100.00%" for r in rows[1:])
    folders = sorted(tmp_path.iterdir())
    assert [re.sub(r"^\d{8}-\d{6}-ablation-(.*)-[0-9a-f]{6}$", r"\1", f.name) for f in folders] == names
    # one table for the four runs: no run's own tables, each note said once, then each run's folder
    out = proc.stdout
    assert "lineages ok" not in out and out.count("(call and exec acc:") == 1
    assert out.count(SCRIPTED_NOTE) == 1
    listing = out.split("runs (each one's tables: geak-core runs show FOLDER):\n", 1)[1].splitlines()
    assert [line.split() for line in listing] == [[n, str(f)] for n, f in zip(names, folders, strict=True)]


def test_a_recorded_run_replays_with_the_server_gone_to_identical_candidates(tmp_path):
    script = Script(generate=[ADD_BROKEN], reflect=[ADD_OK], optimize=[ADD_OK_2])
    summary, store = run(tmp_path, script, iterations=3)
    recorded = [(c.id, c.code) for c in store.candidates()]
    assert len(recorded) == 3 and store.counts()["llm_calls"] == 3
    replay_dir = tmp_path / "replay"
    replay_dir.mkdir()
    path = write_recipe(replay_dir, "http://127.0.0.1:9/v1", iterations=3)  # nothing listens there
    path.write_text(re.sub(
        r'\[llm\][^\[]*',
        f'[llm]\nbackend = "replay"\nmode = "strict"\nsource = "{store.dir}"\n\n',
        path.read_text(),
    ))
    plugins = PluginManager()
    replayed = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    again = RunStore(replay_dir / "runs" / replayed.run_id)
    assert [(c.id, c.code) for c in again.candidates()] == recorded
    assert replayed.execution_accuracy == summary.execution_accuracy == 1.0


def test_resuming_with_a_changed_recipe_is_refused_with_the_change_unless_allowed(tmp_path):
    script = Script(generate=[ADD_BROKEN], reflect=[ADD_OK], optimize=[ADD_OK_2])
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=3, max_llm_calls=1)
        plugins = PluginManager()
        first = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
        assert first.status == "budget_exhausted"
        run_dir = tmp_path / "runs" / first.run_id
        # the budget may change on resume; the number of rounds may not, silently
        changed = path.read_text().replace("max_llm_calls = 1", "max_llm_calls = 10").replace(
            "iterations = 3", "iterations = 2")
        assert changed != path.read_text() and "iterations = 2" in changed
        path.write_text(changed)
        with pytest.raises(InputError) as refused:
            run_recipe(load_recipe(path, plugins), plugins, resume=first.run_id, echo=lambda line: None)
        assert "agent.iterations: 3 -> 2" in str(refused.value) and "--allow-changes" in str(refused.value)
        assert "max_llm_calls" not in str(refused.value)
        assert len(server.requests) == 1  # nothing was asked

        said: list[str] = []
        resumed = run_recipe(load_recipe(path, plugins), plugins, resume=first.run_id, allow_changes=True,
                             echo=said.append)
        assert resumed.status == "finished" and len(server.requests) == 2  # two rounds in all now
        assert any("agent.iterations: 3 -> 2" in line for line in said)
        with RunStore(run_dir) as store:
            history = store.meta("recipe_history")
        assert [h["changes"] for h in history] == [["agent.iterations: 3 -> 2"]]
        assert "iterations = 2" in (run_dir / "recipe.toml").read_text()  # the recipe the run now follows
        # The report says so beside the summary: when, which recipe, what changed.
        from geak_core.reporting.html_report import build_report
        from geak_core.reporting.rundata import load_run

        run = load_run(run_dir)
        assert [h["changes"] for h in run.recipe_history] == [["agent.iterations: 3 -> 2"]]
        page = build_report([run], [], None)
        assert "resumed with recipe changes" in page and "agent.iterations: 3 -&gt; 2" in page
