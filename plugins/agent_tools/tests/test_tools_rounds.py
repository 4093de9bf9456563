"""Rounds of the tools generator in the agent: tool calls come over loopback HTTP through the
real OpenAI backend and are run with the run's judge and store; a malformed call gets an error
result and the round goes on; the round's candidate is the last draft the judge found correct;
every call is stored and shown by ``runs log``; the run's tool budget stops the run and a
resume finishes it without asking, judging or calling anything twice.

The judge is a stand-in (a code is correct when it adds, ``x + y``) that records what it is
asked: these tests are about the agent, the interpreter's verdicts are
test_tools_quickstart.py's."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.model import EvalResult
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.report import format_comparison, format_summary
from geak_core.engine.store import RunStore
from geak_core.reporting.transcript import entries, render

from tests.support.openai_server import Call, OpenAIServer, Reply

OK = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(output_ptr + offs, x + y, mask=mask)
    """)
WRONG = OK.replace("x + y", "x - y")
WRONG_2 = OK.replace("x + y", "x * y")
JUDGED: list[str] = []  # the codes the stand-in judge was asked about, in order


class AddingJudge(EvaluatorBase):
    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        JUDGED.append(candidate.code)
        correct = "x + y" in candidate.code
        return EvalResult(task.id, candidate.id, call_ok=True, correct=correct, mode="interpreter",
                          failed_stage=None if correct else "stage1", reason=None if correct else "output differs")

    def evaluate_many(self, jobs):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


class AddingJudgePlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("adding", AddingJudge)


@pytest.fixture(autouse=True)
def _fresh_judge():
    JUDGED.clear()


def turns(*replies):
    """A server script that answers by the conversation's turn (how many assistant turns the
    request holds), so that a resumed run's requests get the replies of their turns."""
    def reply(request):
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        return replies[turn]
    return reply


def write_recipe(directory: Path, base_url: str, *, run: str = "", generator: str = "") -> Path:
    path = directory / "recipe.toml"
    path.write_text(textwrap.dedent(f"""\
        [run]
        name = "tools-test"
        output_dir = "{directory / 'runs'}"
        {run}

        [llm]
        backend = "openai"
        model = "scripted-model"
        base_url = "{base_url}"
        max_retries = 0

        [suite]
        name = "rocm"
        tasks = ["test_add_kernel"]

        [agent]
        iterations = 1
        lineages = 1

        [generator]
        name = "tools"
        {generator}

        [evaluator]
        name = "adding"
        """))
    return path


def run(directory: Path, script, **recipe):
    with OpenAIServer(script) as server:
        plugins = PluginManager(extra_plugins=[("adding", AddingJudgePlugin())])
        summary = run_recipe(load_recipe(write_recipe(directory, server.base_url, **recipe), plugins), plugins,
                             echo=lambda line: None)
    return summary, RunStore(directory / "runs" / summary.run_id), server


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def test_a_malformed_call_gets_an_error_result_and_the_round_goes_on(tmp_path):
    script = turns(
        Reply.calling(Call("jduge", {"code": OK}), Call("judge", {"code": 42}), Call("judge", "{not json"),
                      Call("judge", {"code": OK, "task": "softmax"}), Call("judge", {})),
        Reply.calling(Call("judge", {"code": OK})),
        "The judge found it correct.",
    )
    summary, store, server = run(tmp_path, script)
    assert tool_results(server.requests[1]) == [
        "error: no tool 'jduge' here (did you mean 'judge'?)",
        "error: argument 'code': expected a string, got an integer",
        "error: the arguments are not a JSON object: '{not json'",
        "error: unknown argument 'task' (valid: 'code')",  # the round's task is bound
        "error: missing argument 'code': The candidate: the whole Python source of the kernel module (Triton "
        "kernels and the entry points the task names), as a file judged by `geak-core eval` holds it.",
    ]
    assert JUDGED == [OK]  # nothing malformed reached the judge
    assert summary.status == "finished" and summary.execution_accuracy == 1.0
    assert {k: summary.tools[k] for k in ("calls", "errors", "refused", "drafts", "drafts_correct")} == \
        {"calls": 6, "errors": 5, "refused": 0, "drafts": 1, "drafts_correct": 1}
    events = [e["payload"] for e in store.iter_events("tool_call")]
    assert [(p["index"], p["tool"], p["is_error"]) for p in events] == [
        (1, "jduge", True), (2, "judge", True), (3, "judge", True), (4, "judge", True), (5, "judge", True),
        (6, "judge", False)]
    assert events[2]["arguments"] == {"invalid": "{not json"}


def test_the_round_takes_the_last_draft_the_judge_found_correct(tmp_path):
    script = turns(
        Reply.calling(Call("show_task")),
        Reply.calling(Call("judge", {"code": OK}), text="Strategy: one chunk per program."),
        Reply.calling(Call("judge", {"code": WRONG}), text="Strategy: try a subtraction."),
        f"My answer:\n```python\n{WRONG_2}```\n",
    )
    summary, store, server = run(tmp_path, script)
    assert len(server.requests) == 4
    candidates = {c.id: c for c in store.candidates("test_add_kernel")}
    assert [(c.id, c.origin, c.parent_id) for c in candidates.values()] == [
        ("test_add_kernel/L0/I0/T2", "tool", None), ("test_add_kernel/L0/I0/T3", "tool", "test_add_kernel/L0/I0/T2"),
        ("test_add_kernel/L0/I0", "generate", None)]
    chosen = candidates["test_add_kernel/L0/I0"]
    assert chosen.code == OK and chosen.strategy == "one chunk per program."
    assert JUDGED == [OK, WRONG]  # the chosen draft's verdict is served, not judged again
    verdicts = dict(store.evaluations("test_add_kernel"))
    assert verdicts["test_add_kernel/L0/I0"].correct and not verdicts["test_add_kernel/L0/I0/T3"].correct
    shown = json.loads(tool_results(server.requests[1])[0])
    assert shown["id"] == "test_add_kernel" and "add_kernel(x_ptr" in shown["statement"]
    judged = json.loads(tool_results(server.requests[3])[2])
    assert (judged["candidate"], judged["correct"], judged["failed_stage"]) == \
        ("test_add_kernel/L0/I0/T3", False, "stage1")
    assert summary.tools["by_tool"] == {"judge": 2, "show_task": 1} and summary.llm_calls == 4


def test_the_summary_counts_the_tool_calls_beside_the_llm_calls(tmp_path):
    script = turns(Reply.calling(Call("show_task"), Call("judge", {"code": WRONG})),
                   Reply.calling(Call("judge", {"code": OK})), "Done.")
    summary, _, _ = run(tmp_path, script)
    line = next(line for line in format_summary(summary).splitlines() if line.startswith("tool calls"))
    assert line.startswith("tool calls (tools): 3 in 1 round (judge 2, show_task 1), ")
    assert line.endswith(" s of tool time; 0 answered with an error, 0 refused; 2 drafts judged (1 correct)")
    table = format_comparison([("loop", dataclasses.replace(summary, tools={}, llm_calls=1)), ("tools", summary)])
    spent = table.split("what each run spent", 1)[1].splitlines()[2:4]
    assert [row.split()[:2] + row.split()[3:4] for row in spent] == [["loop", "1", "0"], ["tools", "3", "3"]]
    assert "what each run spent" not in format_comparison([("loop", dataclasses.replace(summary, tools={}))])


def test_every_tool_call_and_its_result_is_in_runs_log(tmp_path):
    script = turns(Reply.calling(Call("show_task"), Call("judge", {"code": WRONG})),
                   Reply.calling(Call("judge", {"code": OK})), "Done.")
    summary, store, _ = run(tmp_path, script)
    text = render(entries(store.dir))
    for heading in ("--- tool call 1 (turn 0): show_task()", "--- tool call 2 (turn 0): judge(code=<11 lines>) "
                    "-> test_add_kernel/L0/I0/T2", "--- tool call 3 (turn 1): judge(code=<11 lines>) -> "
                    "test_add_kernel/L0/I0/T3"):
        assert heading in text
    for payload in store.iter_events("tool_call"):
        assert payload["payload"]["result"] in text
    assert "--- reply (final)\nDone." in text
    (round_row, *drafts) = entries(store.dir)
    assert round_row.candidate.id == "test_add_kernel/L0/I0" and len(round_row.tool_calls) == 3
    assert [m["role"] for m in round_row.prompt] == ["system", "user"]  # the opening prompt; the calls follow
    assert [(r.round_kind, len(r.tool_calls)) for r in drafts] == [("tool", 1), ("tool", 1)]


def test_the_runs_tool_budget_stops_it_and_a_resume_finishes_without_repeating_anything(tmp_path):
    script = turns(Reply.calling(Call("show_task")), Reply.calling(Call("judge", {"code": OK})), "Done.")
    with OpenAIServer(script) as server:
        plugins = PluginManager(extra_plugins=[("adding", AddingJudgePlugin())])
        path = write_recipe(tmp_path, server.base_url, run="max_tool_calls = 1")
        stopped = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
        assert stopped.status == "budget_exhausted" and "tool call budget of 1" in stopped.note
        assert len(server.requests) == 2 and JUDGED == []
        path.write_text(path.read_text().replace("max_tool_calls = 1", "max_tool_calls = 2"))
        resumed = run_recipe(load_recipe(path, plugins), plugins, resume=stopped.run_id, echo=lambda line: None)
    assert resumed.status == "finished" and resumed.execution_accuracy == 1.0
    assert len(server.requests) == 3 and JUDGED == [OK]  # two turns served from the store, one judgement
    store = RunStore(tmp_path / "runs" / stopped.run_id)
    assert [e["payload"]["tool"] for e in store.iter_events("tool_call")] == ["show_task", "judge"]
    assert resumed.tools["calls"] == 2 and resumed.llm_calls == 3
