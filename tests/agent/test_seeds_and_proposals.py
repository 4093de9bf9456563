"""``[run] seed`` and ``[optimizer] proposals`` through the whole loop: requests over loopback
HTTP to the real OpenAI backend, candidates judged for real (Triton interpreter on the CPU)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from geak_core.api.errors import InputError
from geak_core.engine.agent import Agent, request_seed, run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dump_toml, load_recipe
from geak_core.engine.store import RunStore

from tests.agent.test_loop import (
    ADD_OK,
    ADD_OK_2,
    ADD_WRONG,
    ADD_WRONG_2,
    Script,
    attempts,
    purpose_of,
    run,
    write_recipe,
)
from tests.support.openai_server import OpenAIServer

TASK_KEY = "rocm/test_add_kernel"


NO_CODE = "I would rather not."  # never judged: keeps the runs that only check seeds quick


def test_every_request_carries_a_seed_from_run_seed_different_for_each_lineage(tmp_path):
    script = Script(generate=[NO_CODE])
    with OpenAIServer(script) as server:
        path = write_recipe(tmp_path, server.base_url, optimizer=None, seed=7, iterations=1,
                            lineages=2, concurrency=2)
        plugins = PluginManager()
        run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
        seeds = sorted(r.body["seed"] for r in server.requests)
    assert seeds == sorted(request_seed(7, TASK_KEY, lineage, 0) for lineage in (0, 1))
    assert seeds[0] != seeds[1]
    assert request_seed(8, TASK_KEY, 0, 0) != request_seed(7, TASK_KEY, 0, 0)


def test_the_seed_is_recorded_with_the_run(tmp_path):
    summary, store = run(tmp_path, Script(generate=[NO_CODE]), optimizer=None, seed=7, iterations=1)
    assert summary.seed == 7
    assert store.meta("seed") == 7
    assert re.search(r"\[run\][^\[]*\nseed = 7\n", (store.dir / "recipe.toml").read_text())
    assert json.loads((store.dir / "summary.json").read_text())["seed"] == 7
    (call,) = store.llm_calls()
    assert call["request"]["seed"] == request_seed(7, TASK_KEY, 0, 0)


def test_resuming_with_another_seed_is_refused_naming_the_recorded_one(tmp_path):
    path = write_recipe(tmp_path, "http://127.0.0.1:9/v1", seed=4)
    plugins = PluginManager()
    recipe = load_recipe(path, plugins)
    store = RunStore.create(recipe.run.output_dir, "loop-test", dump_toml(recipe.data), {})
    store.set_meta("seed", 3)
    store.close()
    with pytest.raises(InputError, match=r"started with \[run\] seed = 3.*set seed = 3"):
        run_recipe(recipe, plugins, resume=store.run_id, echo=lambda line: None)


def test_run_seed_does_not_reach_the_judges_secret_seeds(tmp_path):
    path = write_recipe(tmp_path, "http://127.0.0.1:9/v1", seed=5)
    plugins = PluginManager()
    recipe = load_recipe(path, plugins)
    judged = []
    for name in ("a", "b"):
        store = RunStore.create(tmp_path / name, "loop-test", dump_toml(recipe.data), {})
        agent = Agent(recipe, plugins, store, echo=lambda line: None)
        (task,) = agent.tasks()
        judged.append((list(task.seeds), agent.evaluator.seeds_for(task)))
        agent.evaluator.close()
        store.close()
    (fixed, first), (_, second) = judged
    assert first[: len(fixed)] == second[: len(fixed)] == fixed  # the task's own seeds
    assert first[len(fixed):] != second[len(fixed):]  # drawn by each judge, not from [run] seed


# -- optimizer.proposals -----------------------------------------------------------


def candidate_rows(store: RunStore) -> list[tuple[str, str, str | None]]:
    return sorted((c.id, c.code, c.parent_id) for c in store.candidates())


def test_proposals_ask_for_n_completions_in_one_request_and_every_one_is_judged(tmp_path):
    script = Script(generate=[ADD_OK], optimize=[[ADD_OK_2, ADD_WRONG], [ADD_OK_2, ADD_OK]])
    summary, store = run(tmp_path, script, proposals=2, iterations=3)
    assert script.purposes == ["generate", "optimize", "optimize"]
    assert [call["request"]["n"] for call in store.llm_calls()] == [1, 2, 2]
    ids = [row[0] for row in candidate_rows(store)]
    assert ids == ["test_add_kernel/L0/I0", "test_add_kernel/L0/I1/P0", "test_add_kernel/L0/I1/P1",
                   "test_add_kernel/L0/I2/P0", "test_add_kernel/L0/I2/P1"]
    verdicts = {cid: r.correct for cid, r in store.evaluations()}
    assert verdicts["test_add_kernel/L0/I1/P0"] and not verdicts["test_add_kernel/L0/I1/P1"]
    assert len(verdicts) == 5
    assert [a[0] for a in attempts(store)] == ["generate", "optimize", "optimize", "optimize", "optimize"]
    assert "same, with a named mask" in script.prompts[2]  # the correct proposal reached the archive
    assert summary.tasks[0].samples == 5 and store.counts()["llm_calls"] == 3


def test_a_server_refusing_n_gets_one_request_per_proposal_with_consecutive_seeds(tmp_path):
    seed = request_seed(0, TASK_KEY, 0, 1)

    def by_seed(request):
        if purpose_of(request) == "generate":
            return ADD_OK
        return ADD_OK_2 if request.body.get("seed") == seed else ADD_WRONG

    summary, store = run(tmp_path, by_seed, proposals=2, iterations=2, server_options={"max_n": 1})
    rows = dict((cid, code) for cid, code, _ in candidate_rows(store))
    assert rows["test_add_kernel/L0/I1/P0"] in ADD_OK_2 and rows["test_add_kernel/L0/I1/P1"] in ADD_WRONG
    verdicts = {cid: r.correct for cid, r in store.evaluations()}
    assert verdicts == {"test_add_kernel/L0/I0": True, "test_add_kernel/L0/I1/P0": True,
                        "test_add_kernel/L0/I1/P1": False}


# -- reproducibility -----------------------------------------------------------------

OPTIMIZE_CHOICES = [ADD_OK_2, ADD_WRONG_2, ADD_OK]


def seeded_provider(request):
    """Replies as a deterministic function of prompt kind and seed (as a seeded model would)."""
    seed = request.body["seed"]
    purpose = purpose_of(request)
    if purpose == "generate":
        return [ADD_OK, ADD_WRONG][seed % 2]
    if purpose == "optimize":
        return [OPTIMIZE_CHOICES[(seed + i) % 3] for i in range(request.n)]
    return ADD_OK


def comparable_summary(store: RunStore) -> dict:
    data = json.loads((store.dir / "summary.json").read_text())
    data.pop("run_id")
    for task in data["tasks"]:
        task.pop("best_file")
    return data


def outcome(store: RunStore) -> tuple:
    verdicts = sorted((cid, r.call_ok, r.correct) for cid, r in store.evaluations())
    return candidate_rows(store), verdicts, comparable_summary(store)


def replay(tmp_path: Path, name: str, source: Path, seed: int) -> RunStore:
    folder = tmp_path / name
    folder.mkdir()
    path = write_recipe(folder, "http://127.0.0.1:9/v1", seed=seed, proposals=2, iterations=2,
                        lineages=2, concurrency=2)
    path.write_text(re.sub(
        r"\[llm\][^\[]*", f'[llm]\nbackend = "replay"\nmode = "strict"\nsource = "{source}"\n\n',
        path.read_text(),
    ))
    plugins = PluginManager()
    summary = run_recipe(load_recipe(path, plugins), plugins, echo=lambda line: None)
    return RunStore(folder / "runs" / summary.run_id)


def test_replaying_a_recorded_run_with_its_seed_gives_identical_candidates_and_summaries(tmp_path):
    summary, recorded = run(tmp_path, seeded_provider, seed=7, proposals=2, iterations=2,
                            lineages=2, concurrency=2)
    assert summary.status == "finished" and len(candidate_rows(recorded)) >= 3
    first = replay(tmp_path, "first", recorded.dir, seed=7)
    second = replay(tmp_path, "second", recorded.dir, seed=7)
    assert outcome(first) == outcome(second) == outcome(recorded)
    other = replay(tmp_path, "other", recorded.dir, seed=8)
    assert other.meta("status") == "failed"
    note = json.loads((other.dir / "summary.json").read_text())["note"]
    assert "differs in seed (recorded" in note
