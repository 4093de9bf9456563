"""The baseline's timer runs its entry points under the candidate side's instruments.

Both sides of a timing pay the judge's per-call host cost alike: the compute monitor and
the launch log wrap the baseline's entry points as they wrap the candidate's, and what they
find of the trusted baseline is dropped after every block (the GPU's timing is not run
here; this checks the wiring, on the CPU).
"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
from geak_core.api.tasks import EntryPoint, Task

torch = pytest.importorskip("torch")

BASELINE = '''
PROBE = []


def scale(x, alpha):
    PROBE.append(INSIDE())
    return x * alpha
'''


def _task() -> Task:
    return Task(suite="mini", id="scale", instruction="x * alpha", harness="",
                entry_points=[EntryPoint("scale", kind="function", params=("x", "alpha"))])


def _module(tmp_path, name="baseline_scale"):
    path = tmp_path / f"{name}.py"
    path.write_text(BASELINE)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_baselines_entry_points_run_under_the_monitor_and_its_findings_are_dropped(tmp_path):
    from geak_evaluator_triton.baseline_timer import instrumented

    module = _module(tmp_path)
    log = SimpleNamespace(launches=[("k", "f", True)], inside_entry_point=lambda: False)
    module.INSIDE = lambda: log.inside_entry_point()
    timed, drain = instrumented(_task(), module, log)
    assert timed is not module and drain is not None

    out = timed.scale(torch.ones(4), 3.0)
    assert torch.equal(out, torch.full((4,), 3.0))
    assert module.PROBE == [True]  # the call ran inside the monitored entry point
    assert not log.inside_entry_point()  # and only the call
    monitor = next(c.cell_contents for c in timed.scale.__closure__ if hasattr(c.cell_contents, "take"))
    assert [e for e in monitor.events if "aten.mul" in e]  # the monitor saw the baseline's own op ...
    assert drain() == {}  # ... and the block's findings go nowhere
    assert monitor.events == []
    assert log.launches == []
    timed.scale(torch.ones(2), 1.0)
    assert drain() == {} and module.PROBE == [True, True]


def test_a_baseline_without_the_entry_points_is_timed_bare(tmp_path):
    from geak_evaluator_triton.baseline_timer import instrumented

    module = _module(tmp_path, "baseline_other")
    task = Task(suite="mini", id="other", instruction="-", harness="",
                entry_points=[EntryPoint("missing", kind="function", params=("x",))])
    log = SimpleNamespace(launches=[], inside_entry_point=lambda: False)
    timed, drain = instrumented(task, module, log)
    assert timed is module and drain is None
