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
