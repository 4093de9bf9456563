"""The agent profiles correct candidates: each profile stored as a ``profiled`` event and
replayed from it on resume, its diagnosis shown to the next optimize prompt (unless
``[profiler] in_prompts = false``) and beside the candidate in the optimizer's history, a
lineage at its bound's peak stopped with the reason, and a failing profile recorded without
stopping anything.

Replies are scripted (the replay backend; over loopback HTTP where a run is tuned too, as the
tuning tests run it). The judge is a stand-in that times every correct
candidate as a GPU judge would on an H100 (the interpreter times nothing), and whose
``profile()`` returns the counters a test chose: no child runs."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from geak_core import hookimpl
from geak_core.api.components import EvaluatorBase, ProfilerBase
from geak_core.api.errors import RecipeError
from geak_core.api.model import EvalResult, ShapeResult
from geak_core.api.profiling import KernelCounters, ProfileLaunch, ProfileRecord
from geak_core.engine.agent import check_run, run_recipe
from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dotted, load_recipe
from geak_core.engine.report import format_summary
from geak_core.engine.store import RunStore

from tests.agent.test_loop import ADD_OK, ADD_OK_2, Script
from tests.agent.test_tuning import TUNABLE, TUNABLE_2, BlockJudge, tuned_recipe
from tests.support.openai_server import OpenAIServer

TASK = "test_add_kernel"
ADD_OK_3 = ADD_OK.replace("one chunk per program", "a third spelling").replace(
    "mask = offs < n_elements", "mask = offs <= n_elements - 1")
CASE = "n4096_float32"
DEVICE = "NVIDIA H100 80GB HBM3"

# What the stand-in judge does, set by each test: the counters it reports, whether it raises,
# whether it times; and what it was asked to profile.
COUNTERS = {"dram_pct": 40.0, "sm_pct": 30.0}
BEHAVIOUR = {"raise": None, "timed": True}
PROFILED: list[str] = []


class TimedJudge(EvaluatorBase):
    """Every candidate correct; timed at 10 us per call on one case, 2x the reference."""

    def __init__(self, options=None):
        pass

    def evaluate(self, task, candidate):
        if not BEHAVIOUR["timed"]:
            return EvalResult(task.id, candidate.id, call_ok=True, correct=True, mode="interpreter",
                              performance_note="not measured: the Triton interpreter runs kernels on the CPU")
        shape = ShapeResult(CASE, reference_ms=0.02, candidate_ms=0.01, flops=2.68e6, bytes=1.072e7,
                            dtype="float32", achieved_gbs=1072.0, achieved_tflops=0.268, roofline_fraction=0.32,
                            bound="memory")
        return EvalResult(task.id, candidate.id, call_ok=True, correct=True, mode="gpu", device=DEVICE,
                          shapes=[shape], speedup=2.0, performance_measured=True)

    def evaluate_many(self, jobs):
        for job in jobs:
            yield job, self.evaluate(job.task, job.candidate)

    def profile(self, task, candidate, profiler, seconds, *, case="", calls=1):
        PROFILED.append(candidate.id)
        if BEHAVIOUR["raise"] is not None:
            raise BEHAVIOUR["raise"]
        kernel = KernelCounters("add_kernel", duration_us=8.0, occupancy_pct=55.0, registers_per_thread=32,
                                **COUNTERS)
        return ProfileRecord(profiler.profiler_name, candidate.id, CASE, (kernel,), seconds=1.5)

    def close(self):
        return None


class CountersProfiler(ProfilerBase):
    """A profiler the judge above stands in for: nothing of it runs."""

    def __init__(self, options=None):
        pass

    def launch(self):
        return ProfileLaunch()

    def read(self, out, output):
        return []


class AbsentProfiler(CountersProfiler):
    def unusable(self):
        return ["no absent-tool on PATH or in /opt/absent/bin"]


class StandIns:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("timed", TimedJudge)

    @hookimpl
    def geak_register_profilers(self, register):
        register("counters", CountersProfiler)
        register("absent", AbsentProfiler)


@pytest.fixture(autouse=True)
def _fresh_judge():
    COUNTERS.clear()
    COUNTERS.update(dram_pct=40.0, sm_pct=30.0)  # latency-bound: no lineage stops
    BEHAVIOUR.update({"raise": None, "timed": True})
    PROFILED.clear()
    yield


def plugins():
    return PluginManager(extra_plugins=[("stand-ins", StandIns())])


def write_recipe(directory: Path, *, iterations=3, max_llm_calls=None, **profiler) -> Path:
    (directory / "script.toml").write_text(textwrap.dedent('''\
        [[reply]]
        match = { purpose = "generate" }
        file = "generate.md"

        [[reply]]
        match = { purpose = "optimize", iteration = 1 }
        file = "optimize1.md"

        [[reply]]
        match = { purpose = "optimize" }
        file = "optimize2.md"
        '''))
    for name, text in (("generate.md", ADD_OK), ("optimize1.md", ADD_OK_2), ("optimize2.md", ADD_OK_3)):
        (directory / name).write_text(text)
    section = {"name": "counters", **profiler}
    lines = "\n".join(f"{key} = {value!r}".replace("'", '"').replace("True", "true").replace("False", "false")
                      for key, value in section.items())
    budget = f"max_llm_calls = {max_llm_calls}" if max_llm_calls is not None else ""
    path = directory / "recipe.toml"
    path.write_text(textwrap.dedent(f'''\
        [run]
        name = "profiled"
        output_dir = "{directory / 'runs'}"
        {budget}

        [llm]
        backend = "replay"
        mode = "scripted"
        source = "script.toml"

        [suite]
        name = "rocm"
        tasks = ["{TASK}"]

        [evaluator]
        name = "timed"

        [optimizer]
        name = "opro"

        [hardware]
        profile = "h100"

        [agent]
        iterations = {iterations}
        lineages = 1

        [profiler]
        ''') + lines + "\n")
    return path


def run(directory: Path, *, resume: str | None = None, **options):
    manager = plugins()
    path = write_recipe(directory, **options)
    lines: list[str] = []
    summary = run_recipe(load_recipe(path, manager), manager, resume=resume, echo=lines.append)
    return summary, RunStore(directory / "runs" / summary.run_id), lines


def prompts(store: RunStore) -> dict[int, str]:
    """The user message of each round's call, by iteration."""
    return {call["meta"]["iteration"]: call["request"]["messages"][-1]["content"] for call in store.llm_calls()}


@pytest.fixture(scope="module")
def profiled_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("profiled")
    COUNTERS.update(dram_pct=40.0, sm_pct=30.0)
    PROFILED.clear()
    summary, store, lines = run(directory)
    return summary, store, lines, list(PROFILED)


def test_each_correct_candidate_is_profiled_once_and_stored_as_a_profiled_event(profiled_run):
    summary, store, _, asked = profiled_run
    assert asked == [f"{TASK}/L0/I{i}" for i in range(3)]
    events = list(store.iter_events("profiled"))
    assert [(e["task_id"], e["lineage"], e["iteration"]) for e in events] == [(TASK, 0, i) for i in range(3)]
    record = ProfileRecord.from_dict(events[0]["payload"])
    assert (record.profiler, record.candidate_id, record.case, record.error) == ("counters", f"{TASK}/L0/I0",
                                                                                CASE, None)
    assert record.diagnosis is not None and record.diagnosis.bound == "latency"
    assert summary.profiling == {"profiler": "counters", "when": "every_correct", "profiled": 3, "unprofiled": 0,
                                 "bounds": {"latency": 3}, "stopped": [], "notes": {}}
    assert "profiling (counters, each correct candidate): 3 candidates profiled (by bottleneck: 3 latency); " \
           "0 without a profile" in format_summary(summary)


def test_the_next_optimize_prompt_shows_the_diagnosis_of_the_version_it_improves(profiled_run):
    _, store, lines, _ = profiled_run
    block = prompts(store)[1].split("## What the profiler measured of your current version\n", 1)[1]
    assert block.startswith(f"Profiled with counters on case `{CASE}`: latency- or occupancy-bound "
                            "(the busier unit at 40 % of its peak).\n- DRAM 40.0 % of peak\n- compute 30.0 % of peak\n"
                            "- achieved occupancy 55 %\nIts longest kernels:\n"
                            "- add_kernel: 8.0 us, DRAM 40 %, SM 30 %, occupancy 55 %, 32 regs/thread\n")
    assert "## What the profiler measured" not in prompts(store)[0]  # nothing was profiled before it
    assert any(line.startswith(f"[{TASK}] L0 I0 profile  -> {TASK}/L0/I0: latency- or occupancy-bound")
               for line in lines)


def test_the_optimizers_history_names_each_profiled_versions_bottleneck(profiled_run):
    _, store, _, _ = profiled_run
    history = prompts(store)[2].split("## Correct versions so far", 1)[1]
    assert history.count("speedup 2.000x over the reference, profiled latency- or occupancy-bound") == 2


def test_without_profiles_in_prompts_the_profiles_are_stored_and_the_prompts_lack_them(tmp_path, profiled_run):
    summary, store, _ = run(tmp_path, in_prompts=False)
    assert len(list(store.iter_events("profiled"))) == 3 and summary.profiling["profiled"] == 3
    assert not any("profile" in text for text in prompts(store).values())
    for iteration, text in prompts(profiled_run[1]).items():  # the same prompts, less what was profiled
        without = re.sub(r"\n\n## What the profiler measured.*?\n\nPropose", "\n\nPropose", text, flags=re.DOTALL)
        assert prompts(store)[iteration] == re.sub(r", profiled [^\n]*", "", without)


def test_a_lineage_at_its_bounds_peak_stops_optimizing_and_says_why(tmp_path):
    COUNTERS.update(dram_pct=92.0, sm_pct=20.0)
    summary, store, lines = run(tmp_path, stop_at_peak_fraction=0.9)
    assert [call["meta"]["purpose"] for call in store.llm_calls()] == ["generate"]  # no optimize round
    reason = (f"at the roofline: {TASK}/L0/I0 is memory-bound at 92 % of peak "
              "([profiler] stop_at_peak_fraction = 0.9)")
    (stopped,) = store.iter_events("lineage_stopped")
    assert (stopped["task_id"], stopped["lineage"], stopped["payload"]) == (
        TASK, 0, {"reason": reason, "candidate": f"{TASK}/L0/I0"})
    assert f"[{TASK}] L0 I0 stopped: {reason}" in lines
    assert summary.profiling["stopped"] == [{"task": TASK, "lineage": 0, "reason": reason}]
    assert json.loads((store.dir / "tasks" / f"{TASK}.json").read_text())["stopped"] == {"0": reason}
    assert f"lineage {TASK} L0 stopped {reason}" in format_summary(summary)
    assert summary.status == "finished" and summary.execution_accuracy == 1.0


def test_below_the_stop_fraction_the_lineage_goes_on(tmp_path):
    COUNTERS.update(dram_pct=85.0, sm_pct=20.0)
    summary, store, _ = run(tmp_path, stop_at_peak_fraction=0.9, iterations=2)
    assert [call["meta"]["purpose"] for call in store.llm_calls()] == ["generate", "optimize"]
    assert summary.profiling["bounds"] == {"memory": 2} and not list(store.iter_events("lineage_stopped"))


def test_a_resumed_run_replays_its_profiles_without_profiling_again(tmp_path, profiled_run):
    first, _, _ = run(tmp_path, max_llm_calls=1)
    assert first.status == "budget_exhausted" and PROFILED == [f"{TASK}/L0/I0"]
    PROFILED.clear()
    resumed, store, _ = run(tmp_path, max_llm_calls=5, resume=first.run_id)
    assert PROFILED == [f"{TASK}/L0/I1", f"{TASK}/L0/I2"]  # the first round's profile came from the store
    assert len(list(store.iter_events("profiled"))) == 3
    assert prompts(store) == prompts(profiled_run[1])  # the replayed diagnosis reached the prompt
    assert resumed.profiling == profiled_run[0].profiling


def test_a_resumed_stop_at_the_roofline_is_recorded_once(tmp_path):
    COUNTERS.update(dram_pct=92.0, sm_pct=20.0)
    first, _, _ = run(tmp_path, stop_at_peak_fraction=0.9, max_llm_calls=1)
    PROFILED.clear()
    with RunStore(tmp_path / "runs" / first.run_id) as store:
        store.set_meta("status", "interrupted")  # as if stopped before it wrote its summary
        (store.dir / "summary.json").unlink()
    resumed, store, _ = run(tmp_path, stop_at_peak_fraction=0.9, max_llm_calls=1, resume=first.run_id)
    assert PROFILED == [] and len(list(store.iter_events("lineage_stopped"))) == 1
    assert resumed.profiling["stopped"] == first.profiling["stopped"]


def test_a_failing_profile_is_recorded_and_the_run_goes_on(tmp_path):
    BEHAVIOUR["raise"] = RuntimeError("the tool crashed")
    summary, store, lines = run(tmp_path)
    error = "profiling failed: RuntimeError: the tool crashed"
    payloads = [e["payload"] for e in store.iter_events("profiled")]
    assert [(p["candidate"], p["error"], p["diagnosis"]) for p in payloads] == [
        (f"{TASK}/L0/I{i}", error, None) for i in range(3)]
    assert summary.status == "finished" and len(store.llm_calls()) == 3
    assert not any("profile" in text for text in prompts(store).values())
    assert summary.profiling["notes"] == {error: 3}
    assert f"[{TASK}] L0 I0 profile  -> {TASK}/L0/I0: {error}" in lines


def test_an_untimed_candidate_is_not_profiled_and_the_reason_is_recorded(tmp_path):
    BEHAVIOUR["timed"] = False
    summary, store, _ = run(tmp_path, iterations=1)
    assert PROFILED == []
    (event,) = store.iter_events("profiled")
    assert event["payload"]["error"] == ("profile skipped: speed not measured, so there is no latency to explain "
                                         "(the Triton interpreter runs kernels on the CPU)")
    assert summary.profiling["unprofiled"] == 1


def test_when_best_profiles_only_a_round_candidate_that_became_the_lineage_best(tmp_path):
    summary, _, _ = run(tmp_path, when="best")
    assert PROFILED == [f"{TASK}/L0/I0"]  # the optimize rounds' 2.0x are no faster than the first
    assert summary.profiling["when"] == "best"


def test_a_profiler_that_cannot_run_here_fails_the_recipe_check_at_its_name(tmp_path):
    manager = plugins()
    path = write_recipe(tmp_path)
    path.write_text(path.read_text().replace('name = "counters"', 'name = "absent"'))
    with pytest.raises(RecipeError) as refused:
        check_run(load_recipe(path, manager), manager)
    (problem,) = refused.value.problems
    line = path.read_text().splitlines()[problem.line - 1]
    assert (problem.file, problem.key, line) == (str(path), "profiler.name", 'name = "absent"')
    assert problem.message == ('profiler "absent" cannot run here: no absent-tool on PATH or in '
                               "/opt/absent/bin")
    assert not (tmp_path / "runs").exists()


class NcuStandIn:
    """Registers "ncu" where the environment lacks the ncu profiler's plugin: loading a
    recipe needs the name registered, nothing of the tool."""

    @hookimpl
    def geak_register_profilers(self, register):
        register("ncu", CountersProfiler)


def test_the_profiler_feedback_ablation_rows_differ_by_in_prompts_alone():
    manager = PluginManager()
    if "ncu" not in manager.components("profiler"):
        manager = PluginManager(extra_plugins=[("ncu-stand-in", NcuStandIn())])
    folder = Path(__file__).resolve().parents[2] / "recipes" / "ablations"
    full, profiled, feedback = (dotted(load_recipe(folder / f"{name}.toml", manager, check_env=False).data)
                                for name in ("3-full", "5-full-profiled", "6-full-profiler-feedback"))
    assert {k for k in set(profiled) | set(feedback) if profiled.get(k) != feedback.get(k)} == {"profiler.in_prompts"}
    assert (profiled["profiler.in_prompts"], feedback["profiler.in_prompts"]) == (False, True)
    added = {k for k in set(full) | set(profiled) if full.get(k) != profiled.get(k)}
    assert "profiler.name" in added and all(k.startswith("profiler.") for k in added)
    assert profiled["profiler.name"] == "ncu"


class BlockProfilingJudge(BlockJudge):
    """The tuning tests' judge (a block of 256 to 1024 correct, its speedup the block over
    256), timing one case, and profiling as the stand-in above does."""

    def evaluate(self, task, candidate):
        result = super().evaluate(task, candidate)
        if result.correct:
            result.shapes = [ShapeResult(CASE, reference_ms=0.02, candidate_ms=0.02 / result.speedup)]
        return result

    profile = TimedJudge.profile


class TuningStandIns:
    @hookimpl
    def geak_register_evaluators(self, register):
        register("blocks-profiled", BlockProfilingJudge)

    @hookimpl
    def geak_register_profilers(self, register):
        register("counters", CountersProfiler)


def test_a_kept_tuned_variant_is_profiled_as_its_rounds_new_best(tmp_path):
    """Round 0's kernel is tuned and its 4x variant kept: with when = "best" that variant is
    profiled, not the kernel it came from, and the next optimize prompt shows its profile."""
    script = Script(generate=[TUNABLE], optimize=[TUNABLE_2])
    manager = PluginManager(extra_plugins=[("stand-ins", TuningStandIns())])
    with OpenAIServer(script) as server:
        path = tuned_recipe(tmp_path, server.base_url, iterations=2)
        path.write_text(path.read_text().replace('name = "blocks"', 'name = "blocks-profiled"')
                        + '\n[profiler]\nname = "counters"\nwhen = "best"\n')
        summary = run_recipe(load_recipe(path, manager), manager, echo=lambda line: None)
    assert PROFILED == [f"{TASK}/L0/I0-tune2"]  # round 1's 1.0x is no new best
    assert summary.profiling["profiled"] == 1
    assert script.purposes == ["generate", "optimize"]
    assert f"Profiled with counters on case `{CASE}`: latency- or occupancy-bound" in script.prompts[1]
