"""The `opro` optimizer: what enters the archive, what leaves it, and the order it is shown in."""

from __future__ import annotations

import threading
from dataclasses import asdict

import jinja2
import pytest
from geak_core.api.components import ArchiveEntry, Optimizer
from geak_core.api.errors import InputError
from geak_core.api.model import Candidate, EvalResult, ShapeResult
from geak_core.engine.plugins import get_plugin_manager
from geak_optimizer_opro.optimizer import OproOptimizer, OproOptions

TASK = "task@0"


def candidate(name: str, code: str | None = None, strategy: str = "") -> Candidate:
    return Candidate(id=name, task_id="task", code=code or f"# {name}\n", strategy=strategy)


def timed(speedup: float, **kw: object) -> EvalResult:
    return EvalResult(
        task_id="task",
        candidate_id="?",
        call_ok=True,
        correct=True,
        speedup=speedup,
        performance_measured=True,
        mode="gpu",
        **kw,  # type: ignore[arg-type]
    )


def untimed() -> EvalResult:
    return EvalResult(
        task_id="task", candidate_id="?", call_ok=True, correct=True, mode="interpreter"
    )


def opro(size: int = 8, **kw: object) -> OproOptimizer:
    return OproOptimizer(OproOptions(archive_size=size, **kw))  # type: ignore[arg-type]


def archive_ids(opt: OproOptimizer, task_id: str = TASK) -> list[str]:
    return [e.candidate_id for e in opt.context(task_id)["archive"]]


def test_opro_is_registered_and_satisfies_the_protocol() -> None:
    spec = get_plugin_manager().spec("optimizer", "opro")
    assert spec.options is OproOptions
    built = spec.build(OproOptions())
    assert isinstance(built, Optimizer) and built.proposals == 1


def test_defaults_follow_the_documented_options() -> None:
    assert asdict(OproOptions()) == {
        "archive_size": 8,
        "proposals": 1,
        "explore": False,
        "min_speedup_delta": 0.0,
    }


def test_archive_is_sorted_ascending_by_speedup() -> None:
    opt = opro()
    for name, s in [("b", 1.5), ("a", 0.8), ("c", 2.4)]:
        opt.record(TASK, candidate(name), timed(s))
    assert archive_ids(opt) == ["a", "b", "c"]
    assert [e.speedup for e in opt.context(TASK)["archive"]] == [0.8, 1.5, 2.4]


def test_equal_speedups_keep_arrival_order() -> None:
    opt = opro()
    for name in ("first", "second", "third"):
        opt.record(TASK, candidate(name), timed(1.2))
    assert archive_ids(opt) == ["first", "second", "third"]


def test_a_better_candidate_replaces_the_worst_when_full() -> None:
    opt = opro(size=3)
    for name, s in [("a", 1.0), ("b", 2.0), ("c", 3.0)]:
        opt.record(TASK, candidate(name), timed(s))
    opt.record(TASK, candidate("d"), timed(1.5))
    assert archive_ids(opt) == ["d", "b", "c"]


def test_a_candidate_no_better_than_the_worst_does_not_enter_a_full_archive() -> None:
    opt = opro(size=2)
    opt.record(TASK, candidate("a"), timed(1.0))
    opt.record(TASK, candidate("b"), timed(2.0))
    opt.record(TASK, candidate("slow"), timed(0.5))
    opt.record(TASK, candidate("tie"), timed(1.0))
    assert archive_ids(opt) == ["a", "b"]


def test_among_tied_worst_entries_the_earlier_one_stays() -> None:
    opt = opro(size=3)
    for name, s in [("early", 1.0), ("late", 1.0), ("fast", 3.0)]:
        opt.record(TASK, candidate(name), timed(s))
    opt.record(TASK, candidate("new"), timed(2.0))
    assert archive_ids(opt) == ["early", "new", "fast"]


def test_min_speedup_delta_requires_a_real_gain_to_replace() -> None:
    opt = opro(size=1, min_speedup_delta=0.1)
    opt.record(TASK, candidate("a"), timed(1.00))
    opt.record(TASK, candidate("marginal"), timed(1.05))
    assert archive_ids(opt) == ["a"]
    opt.record(TASK, candidate("clear"), timed(1.2))
    assert archive_ids(opt) == ["clear"]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_the_archive_never_exceeds_its_size(size: int) -> None:
    opt = opro(size=size)
    for i in range(20):
        opt.record(TASK, candidate(f"c{i}"), timed(1.0 + (i * 7 % 11) / 10))
        assert len(opt.context(TASK)["archive"]) <= size
    speeds = sorted((1.0 + (i * 7 % 11) / 10 for i in range(20)), reverse=True)[:size]
    assert sorted(e.speedup for e in opt.context(TASK)["archive"]) == sorted(speeds)


def test_the_same_code_is_never_added_twice() -> None:
    opt = opro()
    opt.record(TASK, candidate("a", code="x = 1\n"), timed(1.0))
    opt.record(TASK, candidate("again", code="x = 1\n"), timed(5.0))
    assert archive_ids(opt) == ["a"]


def test_evicted_code_does_not_come_back() -> None:
    opt = opro(size=1)
    opt.record(TASK, candidate("old", code="x = 1\n"), timed(1.0))
    opt.record(TASK, candidate("new", code="x = 2\n"), timed(2.0))
    opt.record(TASK, candidate("old-again", code="x = 1\n"), timed(9.0))
    assert archive_ids(opt) == ["new"]


def test_incorrect_candidates_never_enter() -> None:
    opt = opro()
    wrong = timed(3.0)
    wrong.correct = False
    opt.record(TASK, candidate("wrong"), wrong)
    assert opt.context(TASK)["archive"] == []


def test_unmeasured_candidates_enter_without_a_speedup_in_arrival_order() -> None:
    opt = opro()
    for name in ("one", "two", "three"):
        opt.record(TASK, candidate(name), untimed())
    context = opt.context(TASK)
    assert archive_ids(opt) == ["one", "two", "three"]
    assert [e.speedup for e in context["archive"]] == [None, None, None]
    assert context["best_speedup"] is None and context["speedup_measured"] is False


def test_a_speedup_reported_without_timing_is_not_believed() -> None:
    opt = opro()
    claimed = untimed()
    claimed.speedup = 4.0  # performance_measured is False
    opt.record(TASK, candidate("a"), claimed)
    assert opt.context(TASK)["archive"][0].speedup is None


def test_on_cpu_a_full_archive_keeps_the_most_recent_versions() -> None:
    opt = opro(size=2)
    for name in ("one", "two", "three"):
        opt.record(TASK, candidate(name), untimed())
    assert archive_ids(opt) == ["two", "three"]


def test_measured_entries_rank_above_unmeasured_and_displace_them_first() -> None:
    opt = opro(size=2)
    opt.record(TASK, candidate("cpu"), untimed())
    opt.record(TASK, candidate("gpu-slow"), timed(0.9))
    assert archive_ids(opt) == ["cpu", "gpu-slow"]
    opt.record(TASK, candidate("cpu-2"), untimed())  # cannot replace a measured entry...
    assert archive_ids(opt) == ["cpu-2", "gpu-slow"]  # ...but replaces the older unmeasured one
    opt.record(TASK, candidate("gpu-fast"), timed(1.1))
    assert archive_ids(opt) == ["gpu-slow", "gpu-fast"]
    opt.record(TASK, candidate("cpu-3"), untimed())
    assert archive_ids(opt) == ["gpu-slow", "gpu-fast"]


def test_context_carries_latencies_roofline_and_strategy() -> None:
    opt = opro(explore=True, proposals=3)
    shapes = [
        ShapeResult(
            "n1024",
            reference_ms=0.2,
            candidate_ms=0.1,
            roofline_fraction=0.4,
            bound="memory",
            dtype="float16",
            flops=1.0,
        ),
    ]
    opt.record(
        TASK,
        candidate("a", strategy="fuse the two passes"),
        timed(2.0, shapes=shapes, roofline_fraction=0.4),
    )
    context = opt.context(TASK)
    [entry] = context["archive"]
    assert isinstance(entry, ArchiveEntry)
    assert entry.strategy == "fuse the two passes"
    assert entry.roofline_fraction == 0.4
    assert entry.latencies == [
        {
            "case": "n1024",
            "dtype": "float16",
            "reference_ms": 0.2,
            "candidate_ms": 0.1,
            "speedup": 2.0,
            "roofline_fraction": 0.4,
            "bound": "memory",
        }
    ]
    assert (context["best_speedup"], context["explore"], context["proposals"]) == (2.0, True, 3)


def test_archives_are_kept_per_task() -> None:
    opt = opro()
    opt.record("a@0", candidate("x"), timed(1.0))
    opt.record("b@0", candidate("y"), timed(1.0))
    assert archive_ids(opt, "a@0") == ["x"] and archive_ids(opt, "b@0") == ["y"]
    assert opt.context("unknown")["archive"] == []


def test_concurrent_records_lose_nothing() -> None:
    opt = opro(size=100)

    def worker(offset: int) -> None:
        for i in range(25):
            opt.record(TASK, candidate(f"c{offset}-{i}"), timed(1.0 + i))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opt.context(TASK)["archive"]) == 100


def test_the_prompt_shows_no_invented_numbers_for_unmeasured_versions() -> None:
    opt = opro()
    opt.record(TASK, candidate("a"), untimed())
    template = jinja2.Environment().from_string(
        "{% for e in archive %}{% if e.speedup is not none %}{{ e.speedup }}x"
        "{% else %}speed not measured{% endif %}{% endfor %}"
    )
    assert template.render(**opt.context(TASK)) == "speed not measured"


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"archive_size": 0}, "archive_size"),
        ({"proposals": 0}, "proposals"),
        ({"min_speedup_delta": -0.1}, "min_speedup_delta"),
    ],
)
def test_invalid_options_are_rejected_naming_the_key(values: dict[str, object], key: str) -> None:
    with pytest.raises(InputError, match=rf"optimizer\.{key}"):
        OproOptions(**values)  # type: ignore[arg-type]
