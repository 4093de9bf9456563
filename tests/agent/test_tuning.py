"""The agent tunes correct candidates: variants judged like any candidate, stored with their
parent, counted in the task's results, the faster one kept and shown to the next optimize
prompt; a per-task budget; a resumed run judges no variant twice.

Replies come over loopback HTTP through the real OpenAI backend. The judge is a stand-in
that times by block size, as a GPU judge would time (the interpreter times nothing): a
block of 256 to 1024 is correct and its speedup is the block over 256."""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase
from geak_core.api.errors import InputError
from geak_core.api.model import EvalResult
from geak_core.engine.agent import run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dotted, load_recipe
from geak_core.engine.store import RunStore

from tests.agent.test_loop import Script, write_recipe
from tests.support.openai_server import OpenAIServer

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

TUNABLE = '''Strategy: one autotuned chunk per program.
```python
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4)], key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(output_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
```
'''
TUNABLE_2 = TUNABLE.replace("one autotuned chunk", "a named mask").replace(
    "mask = offs < n_elements", "mask = n_elements > offs")
# The grid tuner's four variants of TUNABLE, in its order (two coarse picks, then the neighbours
# of the fastest judged): 2048 is wrong, 1024 the fastest.
TUNED = ["add_kernel.BLOCK_SIZE 256->2048, add_kernel.num_warps 4->8", "add_kernel.BLOCK_SIZE 256->1024",
         "add_kernel.BLOCK_SIZE 256->2048", "add_kernel.BLOCK_SIZE 256->1024, add_kernel.num_warps 4->2"]

JUDGED: list[str] = []  # candidate ids, in the order the stand-in judge saw them
ON_JUDGE: list = []  # callables run before each verdict (a test's interruption)


class BlockJudge(EvaluatorBase):
    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        for hook in list(ON_JUDGE):
            hook(candidate)
        JUDGED.append(candidate.id)
        block = int(re.search(r'"BLOCK_SIZE": (\d+)', candidate.code).group(1))
        correct = 256 <= block <= 1024
        return EvalResult(task.id, candidate.id, call_ok=True, correct=correct, mode="gpu",
                          speedup=block / 256 if correct else None, performance_measured=correct)

    def evaluate_many(self, jobs):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def close(self):
        return None


class BlockJudgePlugin:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("blocks", BlockJudge)


@pytest.fixture(autouse=True)
def _fresh_judge():
    JUDGED.clear()
    ON_JUDGE.clear()
    yield
    ON_JUDGE.clear()


def tuned_recipe(directory, base_url, *, candidates=4, when="every_correct", **agent):
    path = write_recipe(directory, base_url, **agent)
    path.write_text(path.read_text() + '\n[evaluator]\nname = "blocks"\n\n[tuner]\nname = "grid"\n'
                    f'candidates = {candidates}\nwhen = "{when}"\n')
    return path


def plugins():
    return PluginManager(extra_plugins=[("blocks", BlockJudgePlugin())])


def run(tmp_path, script, **options):
    with OpenAIServer(script) as server:
        manager = plugins()
        recipe = load_recipe(tuned_recipe(tmp_path, server.base_url, **options), manager)
        lines: list[str] = []
        summary = run_recipe(recipe, manager, echo=lines.append)
    return summary, RunStore(tmp_path / "runs" / summary.run_id), lines


@pytest.fixture(scope="module")
def tuned_run(tmp_path_factory):
    """Two rounds: the generated kernel is tuned (four variants, the whole budget), its 1024
    variant kept; the optimize round's kernel finds the budget spent."""
    tmp_path = tmp_path_factory.mktemp("tuned")
    JUDGED.clear()
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    summary, store, lines = run(tmp_path, script, iterations=2)
    return summary, store, lines, script, list(JUDGED)


def test_variants_are_stored_as_candidates_of_the_tuned_one(tuned_run):
    _, store, _, _, _ = tuned_run
    tuned = [c for c in store.candidates("test_add_kernel") if c.origin == "tune"]
    assert [c.strategy for c in tuned] == [f"launch configuration: {change}" for change in TUNED]
    assert {(c.parent_id, c.lineage, c.iteration) for c in tuned} == {("test_add_kernel/L0/I0", 0, 0)}
    verdicts = dict(store.evaluations("test_add_kernel"))
    assert [verdicts[c.id].correct for c in tuned] == [False, True, False, True]


def test_the_faster_variant_counts_like_any_candidate_in_the_tasks_results(tuned_run):
    summary, store, _, _, _ = tuned_run
    (task,) = summary.tasks
    assert task.best_candidate_id == "test_add_kernel/L0/I0-tune2" and task.best_speedup == 4.0
    assert task.samples == 2 + 4  # two rounds' candidates and the four variants
    assert '"BLOCK_SIZE": 1024' in (store.dir / "best" / "test_add_kernel.py").read_text()
    attempts = json.loads((store.dir / "tasks" / "test_add_kernel.json").read_text())["attempts"]
    assert [a["kind"] for a in attempts] == ["generate", "tune", "tune", "tune", "tune", "optimize"]


def test_the_next_optimize_prompt_shows_the_knobs_the_kept_variant_changed(tuned_run):
    _, _, _, script, _ = tuned_run
    assert script.purposes == ["generate", "optimize"]
    prompt = script.prompts[1]
    section = prompt.split("## Launch configurations tried without the model", 1)[1]
    assert "Of 4 launch configurations tried near a correct version, the fastest ran at 4.000x " \
           "instead of 1.000x" in section
    assert "\n- add_kernel.BLOCK_SIZE 256->1024\n" in section
    assert '"BLOCK_SIZE": 1024' in prompt.split("## Launch configurations", 1)[0]  # in the archive


def test_the_task_budget_bounds_the_variants_and_a_spent_budget_is_said(tuned_run):
    summary, _, lines, _, judged = tuned_run
    assert sum("-tune" in cid for cid in judged) == 4  # the budget: candidates = 4 per task
    spent = ("tuning skipped: the task's tuning budget ([tuner] candidates = 4, seconds = 120) "
             "is spent")
    assert any(line.startswith("[test_add_kernel] L0 I1 tuning   -> test_add_kernel/L0/I1: " + spent)
               for line in lines)
    assert any(line.startswith("[test_add_kernel] L0 I0 tuning   -> test_add_kernel/L0/I0: 4 variants "
                               "judged (2 correct), kept add_kernel.BLOCK_SIZE 256->1024: 1.00x -> 4.00x")
               for line in lines)
    tuning = {k: v for k, v in summary.tuning.items() if k != "notes"}
    assert tuning == {"tuner": "grid", "when": "every_correct", "tuned": 1, "skipped": 1,
                      "variants_judged": 4, "variants_correct": 2, "kept": 1}
    assert summary.tuning["notes"][spent] == 1


def test_when_best_tunes_only_a_candidate_that_became_its_lineages_best(tmp_path):
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    summary, store, _ = run(tmp_path, script, iterations=2, candidates=20, when="best")
    parents = {c.parent_id for c in store.candidates() if c.origin == "tune"}
    assert parents == {"test_add_kernel/L0/I0"}  # the optimize round's 1.0x is no new best
    assert (summary.tuning["tuned"], summary.tuning["skipped"]) == (1, 0)


def test_a_resumed_run_replays_its_tunings_without_judging_a_variant_again(tmp_path, tuned_run):
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    with OpenAIServer(script) as server:
        path = tuned_recipe(tmp_path, server.base_url, iterations=2, max_llm_calls=1)
        first = run_recipe(load_recipe(path, plugins()), plugins(), echo=lambda line: None)
        assert first.status == "budget_exhausted" and sum("-tune" in c for c in JUDGED) == 4
        JUDGED.clear()
        path.write_text(path.read_text().replace("max_llm_calls = 1", "max_llm_calls = 5"))
        resumed = run_recipe(load_recipe(path, plugins()), plugins(), resume=first.run_id, echo=lambda line: None)
    assert JUDGED == ["test_add_kernel/L0/I1"]  # the new round only: its tuning found the budget spent
    uninterrupted = tuned_run[0]
    assert _comparable(resumed) == _comparable(uninterrupted)


def test_a_tuning_stopped_half_way_resumes_judging_only_the_variants_without_a_verdict(tmp_path, monkeypatch):
    """Ctrl-C while the third variant is judged: the two judged before it are served from the
    store on resume; the third, whose verdict was never recorded, is judged again."""
    import geak_core.kit.sandbox

    stopped = threading.Event()
    monkeypatch.setattr(geak_core.kit.sandbox, "stop_running_jobs", lambda refuse_new=False: stopped.set())  # what Ctrl-C kills

    def interrupt_at_the_third_variant(candidate):
        if candidate.id.endswith("-tune3") and not stopped.is_set():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            assert stopped.wait(30), "the run never saw the interruption"

    ON_JUDGE.append(interrupt_at_the_third_variant)
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    with OpenAIServer(script) as server:
        path = tuned_recipe(tmp_path, server.base_url, iterations=2)
        with pytest.raises(KeyboardInterrupt):
            run_recipe(load_recipe(path, plugins()), plugins(), echo=lambda line: None)
        (run_dir,) = (tmp_path / "runs").iterdir()
        with RunStore(run_dir) as store:
            assert [c for c, _ in store.evaluations() if "-tune" in c] == [
                "test_add_kernel/L0/I0-tune1", "test_add_kernel/L0/I0-tune2"]
        JUDGED.clear()
        resumed = run_recipe(load_recipe(path, plugins()), plugins(), resume=run_dir.name, echo=lambda line: None)
    assert JUDGED == ["test_add_kernel/L0/I0-tune3", "test_add_kernel/L0/I0-tune4", "test_add_kernel/L0/I1"]
    assert resumed.status == "finished" and resumed.tasks[0].best_speedup == 4.0


def test_a_changed_tuning_budget_is_a_recipe_change_on_resume(tmp_path):
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    with OpenAIServer(script) as server:
        path = tuned_recipe(tmp_path, server.base_url, iterations=2, max_llm_calls=1)
        first = run_recipe(load_recipe(path, plugins()), plugins(), echo=lambda line: None)
        path.write_text(path.read_text().replace("candidates = 4", "candidates = 8"))
        with pytest.raises(InputError) as refused:
            run_recipe(load_recipe(path, plugins()), plugins(), resume=first.run_id, echo=lambda line: None)
    assert "tuner.candidates: 4 -> 8" in str(refused.value)


def _comparable(summary):
    data = summary.to_dict()
    data.pop("run_id")
    for task in data["tasks"]:
        task.pop("best_file")
    return data


def test_the_tuned_ablation_row_differs_from_the_full_agent_by_its_tuner_section_alone():
    manager = PluginManager()
    full = dotted(load_recipe(RECIPES / "ablations" / "3-full.toml", manager, check_env=False).data)
    tuned = dotted(load_recipe(RECIPES / "ablations" / "4-full-tuned.toml", manager, check_env=False).data)
    changed = {key for key in set(full) | set(tuned) if full.get(key) != tuned.get(key)}
    assert changed == {"tuner.name", "tuner.dtype_bytes"}  # grid, and the grid's own option
    assert tuned["tuner.name"] == "grid"


@pytest.mark.slow
def test_the_tuned_quickstart_runs_on_a_cpu_and_says_that_nothing_was_tuned(tmp_path):
    """The quickstart with [tuner] name = "grid", judged for real under the interpreter: the
    same verdicts as the untuned quickstart, each correct candidate's tuning skipped with the
    reason, in a line of its own and under the summary."""
    manager = PluginManager()
    recipe = load_recipe(RECIPES / "quickstart-tuned.toml", manager)
    recipe.run.output_dir = str(tmp_path)
    lines: list[str] = []
    summary = run_recipe(recipe, manager, echo=lines.append)
    assert summary.status == "finished" and summary.execution_accuracy == 1.0
    skipped = ("tuning skipped: speed not measured, so no variant could be found faster (the Triton "
               "interpreter runs kernels on the CPU, so its latencies say nothing about GPU speed)")
    tuning_lines = [line for line in lines if " tuning   -> " in line]
    assert sorted(line.split(" -> ")[0] for line in tuning_lines) == sorted(  # tasks interleave
        f"[{task}] L0 I{i} tuning  " for task in ("test_add_kernel", "softmax") for i in (1, 2))
    assert all(line.endswith(skipped) for line in tuning_lines)
    assert summary.tuning == {"tuner": "grid", "when": "every_correct", "tuned": 0, "skipped": 4,
                              "variants_judged": 0, "variants_correct": 0, "kept": 0, "notes": {skipped: 4}}
    printed = "\n".join(lines)
    assert ("tuning (grid, each correct candidate): 0 candidates tuned, 0 variants judged (0 correct), "
            "0 faster kept; 4 candidates not tuned") in printed
    with RunStore(tmp_path / summary.run_id) as store:
        assert not [c for c in store.candidates() if c.origin == "tune"]


def test_runs_log_shows_a_variant_as_tuned_without_a_prompt_of_its_own(tuned_run):
    from geak_core.reporting.transcript import entries, render

    _, store, _, _, _ = tuned_run
    rows = entries(store.dir, candidate="test_add_kernel/L0/I0-tune4")
    (row,) = rows
    assert (row.round_kind, row.prompt, row.reply) == ("tune", [], None)
    text = render(rows)
    assert "builds on: test_add_kernel/L0/I0" in text and "tuned without the LLM" in text


class TwoAtOnce(BlockJudge):
    max_parallel = 2


class BrokenTuner:
    def __init__(self, options=None):
        pass

    def tune(self, task, candidate, judge, budget):
        raise RuntimeError("no knobs today")


class MorePlugins:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("blocks-two", TwoAtOnce)

    @hookimpl
    def geak_register_tuners(self, register):
        register("broken", BrokenTuner)


def _run_with(tmp_path, *replace: tuple[str, str]):
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    with OpenAIServer(script) as server:
        manager = PluginManager(extra_plugins=[("blocks", BlockJudgePlugin()), ("more", MorePlugins())])
        path = tuned_recipe(tmp_path, server.base_url, iterations=2)
        text = path.read_text()
        for old, new in replace:
            text = text.replace(old, new)
        path.write_text(text)
        lines: list[str] = []
        summary = run_recipe(load_recipe(path, manager), manager, echo=lines.append)
    return summary, RunStore(tmp_path / "runs" / summary.run_id), lines


def test_variants_judged_two_at_once_are_stored_and_counted_as_when_judged_one_by_one(tmp_path, tuned_run):
    summary, store, _ = _run_with(tmp_path, ('name = "blocks"', 'name = "blocks-two"'))
    one_by_one = tuned_run[1]
    assert [(c.id, c.code) for c in store.candidates()] == [(c.id, c.code) for c in one_by_one.candidates()]
    assert _comparable(summary) == _comparable(tuned_run[0])


def test_a_tuner_that_fails_is_reported_and_the_lineage_goes_on_untuned(tmp_path):
    summary, store, lines = _run_with(tmp_path, ('name = "grid"', 'name = "broken"'))
    assert summary.status == "finished" and summary.tasks[0].best_speedup == 1.0
    failed = "tuning failed: RuntimeError: no knobs today"
    assert any(line.endswith("test_add_kernel/L0/I0: " + failed) for line in lines)
    assert summary.tuning["notes"] == {failed: 2}  # both rounds' candidates: the budget is untouched
    assert "no knobs today" in next(store.iter_events("error"))["payload"]["traceback"]
