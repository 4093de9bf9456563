"""The default `optimize` template renders what `opro` puts in its context."""

from __future__ import annotations

from geak_core.api.model import Candidate, EvalResult, ShapeResult
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.plugins import get_plugin_manager
from geak_core.engine.prompts import PromptRenderer
from geak_optimizer_opro.optimizer import OproOptimizer, OproOptions

TASK = Task(
    suite="s", id="t", instruction="Add two vectors.", entry_points=[EntryPoint("k")], harness=""
)


def renderer() -> PromptRenderer:
    templates = get_plugin_manager().build("prompt_templates", "default")
    return PromptRenderer({n: templates.source(n) for n in templates.names()}, {})


def render(opt: OproOptimizer) -> str:
    return renderer().render(
        "optimize", task=TASK.prompt_view(), knowledge=[], hardware=None, **opt.context("t@0")
    )


def correct(**kw: object) -> EvalResult:
    return EvalResult(task_id="t", candidate_id="?", call_ok=True, correct=True, **kw)  # type: ignore[arg-type]


def test_measured_versions_show_their_speedups_slowest_first() -> None:
    opt = OproOptimizer(OproOptions())
    shapes = [ShapeResult("n4096", reference_ms=0.3, candidate_ms=0.1)]
    opt.record(
        "t@0",
        Candidate("fast", "t", "# fast\n", strategy="vectorise"),
        correct(speedup=3.0, performance_measured=True, shapes=shapes),
    )
    opt.record(
        "t@0", Candidate("slow", "t", "# slow\n"), correct(speedup=1.25, performance_measured=True)
    )
    text = render(opt)
    assert text.index("speedup 1.250x") < text.index("speedup 3.000x")
    assert "Strategy: vectorise" in text and "n4096: 0.1000 ms (reference 0.3000 ms)" in text


def test_unmeasured_versions_say_so_and_carry_no_number() -> None:
    opt = OproOptimizer(OproOptions(explore=True))
    opt.record("t@0", Candidate("a", "t", "# a\n"), correct(mode="interpreter"))
    text = render(opt)
    assert "speed not measured" in text and "speedup" not in text.replace("speed not", "")
    assert "differs from all of the above" in text


def test_a_kept_tuning_shows_each_changed_knob_on_a_line_of_its_own() -> None:
    from geak_core.api.components import TuningReport

    opt = optimizer_with_one()
    tuning = [TuningReport("c", judged=6, correct=5, changes=("add_kernel.BLOCK_SIZE 256->512",
                                                               "add_kernel.num_warps 4->8"),
                           speedup_before=1.25, speedup_after=1.5)]
    text = renderer().render("optimize", task=TASK.prompt_view(), knowledge=[], hardware=None,
                             tuning=tuning, **opt.context("t@0"))
    section = text.split("## Launch configurations tried without the model\n", 1)[1]
    assert section.startswith("Of 6 launch configurations tried near a correct version, the fastest ran "
                              "at 1.500x instead of 1.250x (it is among the versions above). It changed:\n"
                              "- add_kernel.BLOCK_SIZE 256->512\n- add_kernel.num_warps 4->8\n")


def test_a_tuning_that_kept_nothing_says_none_was_faster() -> None:
    from geak_core.api.components import TuningReport

    text = renderer().render("optimize", task=TASK.prompt_view(), knowledge=[], hardware=None,
                             tuning=[TuningReport("c", judged=3, correct=2, speedup_before=1.25)],
                             **optimizer_with_one().context("t@0"))
    assert ("Of 3 launch configurations tried near a correct version (2 correct), none ran faster than "
            "its 1.250x.") in text


def test_without_tuning_the_prompt_has_no_tuning_section() -> None:
    assert "Launch configurations tried" not in render(optimizer_with_one())


def optimizer_with_one() -> OproOptimizer:
    opt = OproOptimizer(OproOptions())
    opt.record("t@0", Candidate("a", "t", "# a\n"), correct(speedup=1.25, performance_measured=True))
    return opt


def memory_bound_profile(candidate_id: str = "a"):
    from geak_core.api.profiling import Diagnosis, KernelCounters, ProfileRecord

    return ProfileRecord("ncu", candidate_id, case="n4096",
                         kernels=(KernelCounters("add_kernel", duration_us=12.0, dram_pct=91.0, sm_pct=20.0),),
                         diagnosis=Diagnosis("memory", 0.91, ("DRAM throughput 91.0 % of peak", "3050 GB/s moved")))


def test_a_profiled_version_of_the_history_names_its_bottleneck() -> None:
    opt = optimizer_with_one()
    opt.record("t@0", Candidate("b", "t", "# b\n"), correct(speedup=2.0, performance_measured=True))
    opt.record_profile("t@0", memory_bound_profile("a"))
    text = render(opt)
    assert "### Version 1: speedup 1.250x over the reference, profiled memory-bound at 91 % of peak\n" in text
    assert "### Version 2: speedup 2.000x over the reference\n" in text  # not profiled: nothing said


def test_a_failed_profile_leaves_the_history_as_it_was() -> None:
    from geak_core.api.profiling import ProfileRecord

    opt = optimizer_with_one()
    before = render(opt)
    opt.record_profile("t@0", ProfileRecord("ncu", "a", error="profiling failed: no GPU"))
    assert render(opt) == before


def test_the_optimize_prompt_shows_the_profile_block_with_evidence_and_counters() -> None:
    from geak_core.api.profiling import profile_view

    text = renderer().render("optimize", task=TASK.prompt_view(), knowledge=[], hardware=None,
                             profile=profile_view(memory_bound_profile()), **optimizer_with_one().context("t@0"))
    block = text.split("## What the profiler measured of your current version\n", 1)[1]
    assert block.startswith("Profiled with ncu on case `n4096`: memory-bound at 91 % of peak.\n"
                            "- DRAM throughput 91.0 % of peak\n- 3050 GB/s moved\n"
                            "Its longest kernels:\n- add_kernel: 12.0 us, DRAM 91 %, SM 20 %\n"
                            "Only moving fewer bytes can make it much faster")


def test_without_a_profile_the_prompt_has_no_profile_block() -> None:
    text = renderer().render("optimize", task=TASK.prompt_view(), knowledge=[], hardware=None, profile=None,
                             **optimizer_with_one().context("t@0"))
    assert "profiler" not in text and text == render(optimizer_with_one())


def test_the_reflect_prompt_shows_the_profile_of_the_last_correct_version() -> None:
    from geak_core.api.profiling import profile_view

    common = {"task": TASK.prompt_view(), "code": "# broken\n", "report": "failed stage: run", "call_ok": False,
              "attempt": 1, "max_attempts": 2, "fixing_optimized": True, "reflections": []}
    text = renderer().render("reflect", **common, profile=profile_view(memory_bound_profile()))
    assert "## What the profiler measured of your last correct version\nProfiled with ncu" in text
    assert "profiler" not in renderer().render("reflect", **common, profile=None)
