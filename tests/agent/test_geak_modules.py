"""The GEAK modules through the whole loop: retrieval by code on reflect rounds, Reflexion
memory, fixing failed optimisation proposals, skipping what the judge cannot run, and the
scaling data of the summary. Requests go over loopback HTTP to the real OpenAI backend;
candidates are judged for real (Triton interpreter on the CPU)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from geak_core import hookimpl
from geak_core.api.tasks import EntryPoint, Requirement, Task
from geak_core.cli import main
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import load_recipe
from geak_core.engine.store import RunStore

from tests.agent.test_loop import (
    ADD_OK,
    ADD_OK_2,
    ADD_WRONG,
    ADD_WRONG_2,
    ROOT,
    Script,
    attempts,
    run,
    write_recipe,
)
from tests.support.openai_server import OpenAIServer

# Runs, but computes a row softmax instead of x + y: wrong, and its code reads like a softmax.
ADD_AS_SOFTMAX = """Strategy: normalise the chunk.
```python
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    row = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    shifted = row - tl.max(row, axis=0)
    numerator = tl.exp(shifted)
    tl.store(output_ptr + offs, numerator / tl.sum(numerator, axis=0), mask=mask)
```
"""

CODESIM_BY_CODE = '\n[retriever]\nname = "codesim"\nquery = "code"\n'


def _run_with(tmp_path, script, extra, **agent):
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, **agent)
        path.write_text(path.read_text() + extra)
        plugins = PluginManager()
        summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    return summary, RunStore(tmp_path / "runs" / summary.run_id)


def test_a_reflect_round_retrieves_by_the_failed_code_and_gets_another_example(tmp_path):
    script = Script(generate=[ADD_AS_SOFTMAX], reflect=[ADD_OK])
    summary, store = _run_with(tmp_path, script, CODESIM_BY_CODE, optimizer=None, iterations=2)
    assert script.purposes == ["generate", "reflect"]
    events = [e["payload"] for e in store.iter_events("retrieved")]
    assert [(e["round"], e["query"]) for e in events] == [("generate", "instruction"), ("reflect", "code")]
    by_instruction, by_code = (e["examples"][0]["id"] for e in events)
    assert by_instruction == "builtin:vector_add" and by_code == "builtin:softmax_rows"
    assert "def add_vectors_kernel" in script.prompts[0] and "softmax" not in script.prompts[0].lower()
    assert "softmax" in script.prompts[1].split("## A similar kernel")[1].lower()
    assert summary.tasks[0].correct


def test_retriever_rounds_can_leave_reflect_rounds_without_examples(tmp_path):
    script = Script(generate=[ADD_AS_SOFTMAX], reflect=[ADD_OK])
    extra = CODESIM_BY_CODE + 'rounds = ["generate"]\n'
    _, store = _run_with(tmp_path, script, extra, optimizer=None, iterations=2)
    assert [e["payload"]["round"] for e in store.iter_events("retrieved")] == ["generate"]
    assert "## A similar kernel" not in script.prompts[1]


def test_the_reflect_prompt_carries_the_lineages_earlier_failures(tmp_path):
    script = Script(generate=[ADD_WRONG], reflect=[ADD_WRONG_2, ADD_OK])
    summary, store = run(tmp_path, script, optimizer=None, iterations=3)
    assert script.purposes == ["generate", "reflect", "reflect"]
    first_fix, second_fix = script.prompts[1], script.prompts[2]
    assert "## Earlier failed attempts" not in first_fix  # nothing earlier than the failure shown
    memory = second_fix.split("## Earlier failed attempts in this lineage")[1]
    assert "Round 0 (generate): tried subtract chunk per program" in memory
    assert "failed at stage1" in memory
    assert "multiply chunk" not in memory  # the failure being fixed is shown in full above it
    assert "tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr" in second_fix
    assert summary.tasks[0].correct


def test_memory_zero_shows_only_the_failure_being_fixed(tmp_path):
    script = Script(generate=[ADD_WRONG], reflect=[ADD_WRONG_2, ADD_OK])
    _run_with(tmp_path, script, "\n[reflector]\nname = \"geak\"\nmemory = 0\n", optimizer=None, iterations=3)
    assert "## Earlier failed attempts" not in script.prompts[2]


def test_a_failed_optimisation_proposal_is_fixed_before_it_is_dropped(tmp_path):
    script = Script(generate=[ADD_OK], optimize=[ADD_WRONG, ADD_OK_2], reflect=[ADD_WRONG_2])
    summary, store = run(tmp_path, script, iterations=4, max_perf_debug_attempts=1)
    assert script.purposes == ["generate", "optimize", "reflect", "optimize"]
    fix = script.prompts[2]
    assert "- tl.load(y_ptr" in fix  # the failed proposal is the module to fix
    assert "attempt to make your correct version faster" in fix and "fix attempt 1 of 1" in fix
    # its fix failed too: dropped, the lineage optimises from its correct version again
    assert "same, with a named mask" not in script.prompts[3] and "one chunk per program" in script.prompts[3]
    assert [a[0] for a in attempts(store)] == ["generate", "optimize", "reflect", "optimize"]
    assert summary.tasks[0].correct


def test_without_perf_debug_attempts_a_failed_proposal_is_dropped_at_once(tmp_path):
    script = Script(generate=[ADD_OK], optimize=[ADD_WRONG, ADD_OK_2])
    run(tmp_path, script, iterations=3, max_perf_debug_attempts=0)
    assert script.purposes == ["generate", "optimize", "optimize"]


class _GpuOnlySuite:
    name = "gpuonly"
    description = "one task that needs a device no machine has (compute capability 99)"

    def __init__(self, options=None):
        self.task = Task(
            suite="gpuonly", id="needs_cc99", instruction="out = x + y on a future GPU.",
            entry_points=[EntryPoint("add_kernel", params=("x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"),
                                     constexpr=("BLOCK",))],
            harness="nowhere:Never", requires=[Requirement("cc>=99.0", "a device no machine has")],
        )

    def tasks(self):
        return [self.task]

    def get(self, task_id):
        return self.task


class _GpuOnlyPlugin:
    @hookimpl
    def geak_register_suites(self, register):
        register("gpuonly", _GpuOnlySuite)


def test_a_task_the_judge_cannot_run_here_is_skipped_before_any_llm_call(tmp_path):
    script = Script(generate=[ADD_OK])
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=2)
        path.write_text(path.read_text().replace('name = "rocm"\ntasks = ["test_add_kernel"]', 'name = "gpuonly"'))
        plugins = PluginManager(extra_plugins=[("gpuonly", _GpuOnlyPlugin())])
        summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
        assert server.requests == []
    (task,) = summary.tasks
    assert task.skipped_reason and "needs cc>=99.0" in task.skipped_reason
    assert summary.llm_calls == 0 and summary.status == "finished"


def test_summary_json_runs_show_and_compare_carry_the_scaling_data(tmp_path):
    script = Script(generate=[ADD_WRONG], reflect=[ADD_OK], optimize=[ADD_OK_2])
    summary, store = run(tmp_path, script, iterations=3, lineages=2, concurrency=2)
    data = json.loads((store.dir / "summary.json").read_text())
    assert [p["iteration"] for p in data["by_iteration"]] == [1, 2, 3]
    notes = [(a["kind"], a["correct"], a.get("note")) for a in
             json.loads((store.dir / "tasks" / "test_add_kernel.json").read_text())["attempts"]]
    assert [p["execution_accuracy"] for p in data["by_iteration"]] == [0.0, 1.0, 1.0], notes
    assert [p["call_accuracy"] for p in data["by_iteration"]] == [1.0, 1.0, 1.0], notes
    assert data["pass_at_k"] == {"pass@1": 1.0, "pass@2": 1.0}
    assert data["call_pass_at_k"] == {"pass@1": 1.0, "pass@2": 1.0}
    assert set(data["speedups"]) == {"sum", "geomean", "mean_ratio"}  # all three, even unmeasured
    runner = CliRunner()
    shown = runner.invoke(main, ["runs", "show", str(store.dir)])
    assert shown.exit_code == 0, shown.output
    assert "execution accuracy  0.00% 100.00% 100.00%" in shown.output
    assert "pass@k for k = 1..2" in shown.output
    # timed on a GPU, not measured under the interpreter: the line shows what summary.json holds
    mean_ratio = data["speedups"]["mean_ratio"]
    assert f"mean_ratio {'n/m' if mean_ratio is None else f'{mean_ratio:.2f}x'}" in shown.output
    compared = runner.invoke(main, ["compare", str(store.dir), str(store.dir)])
    assert compared.exit_code == 0, compared.output
    for title in ("speedup by aggregate", "call accuracy pass@k", "execution accuracy after each round"):
        assert title in compared.output


def test_the_direct_baselines_make_one_call_per_lineage_and_1_shot_shows_an_example(tmp_path):
    plugins = PluginManager()
    prompts = {}
    for name in ("0-shot", "1-shot"):
        recipe = load_recipe(ROOT / "recipes" / "baselines" / f"{name}.toml", plugins)
        recipe.run.output_dir = str(tmp_path)
        summary = run_recipe(recipe, plugins, echo=lambda line: None)
        store = RunStore(tmp_path / summary.run_id)
        (call,) = store.llm_calls()
        prompts[name] = call["request"]["messages"][-1]["content"]
        assert [e["payload"]["round"] for e in store.iter_events("retrieved")] == ["generate"]
    assert "## A similar kernel" not in prompts["0-shot"] and "## A similar kernel" in prompts["1-shot"]


def test_the_fix_prompt_carries_the_knowledge_packs_within_its_budget_unless_turned_off(tmp_path):
    from geak_agent_geak.reflector import fit_knowledge

    packs = [{"title": "A", "text": "a1\na2\n"}, {"title": "B", "text": "b1\nb2\nb3\n"}, {"title": "C", "text": "c"}]
    assert fit_knowledge(packs, 100) == packs
    assert fit_knowledge(packs, 11) == [packs[0], {"title": "B", "text": "b1\n(cut to fit the prompt)"}]
    assert fit_knowledge(packs, 7) == [packs[0]]  # nothing of B fits: B and what follows dropped
    assert fit_knowledge(packs, 0) == []

    knowledge = '\n[knowledge]\npacks = ["triton-core"]\n'
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    script = Script(generate=[ADD_WRONG], reflect=[ADD_OK])
    _run_with(tmp_path / "on", script, knowledge, optimizer=None, iterations=2)
    assert script.purposes == ["generate", "reflect"]
    generate, fix = script.prompts
    assert "## Triton essentials" in generate and "## Triton essentials" in fix
    pack = generate.split("## Triton essentials", 1)[1].split("Write the complete module", 1)[0].strip()
    assert pack and pack in fix  # the same text, whole (it is within the default budget)

    script = Script(generate=[ADD_WRONG], reflect=[ADD_OK])
    _run_with(tmp_path / "off", script, knowledge + '\n[reflector]\nname = "geak"\nknowledge = false\n',
              optimizer=None, iterations=2)
    assert "## Triton essentials" in script.prompts[0] and "## Triton essentials" not in script.prompts[1]
