"""Several candidates per device, spare children, adaptive timing and the noise allowance."""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch
from judge_support import judge_options


def test_timing_waits_for_the_runs_on_its_device_and_runs_wait_for_timing():
    from geak_evaluator_triton.devices import DeviceGate

    gate = DeviceGate()
    events: list[str] = []
    gate.acquire_shared()

    def timing() -> None:
        gate.acquire_exclusive()
        events.append("timing starts")
        time.sleep(0.05)
        events.append("timing ends")
        gate.release_exclusive()

    def late_run() -> None:
        time.sleep(0.05)  # arrives while timing waits: it must not overtake it
        gate.acquire_shared()
        events.append("late run")
        gate.release_shared()

    threads = [threading.Thread(target=timing), threading.Thread(target=late_run)]
    for t in threads:
        t.start()
    time.sleep(0.15)
    assert events == []  # the first run still holds the device
    events.append("first run ends")
    gate.release_shared()
    for t in threads:
        t.join(5)
    assert events == ["first run ends", "timing starts", "timing ends", "late run"]


def test_slots_of_one_gpu_share_its_gate_and_devices_interleave():
    from geak_evaluator_triton.devices import gpu_slots

    slots = gpu_slots("nvidia", ["0", "1"], 3)
    assert len(slots) == 6
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in slots[:2]] == ["0", "1"]
    by_device: dict[str, set[int]] = {}
    for slot in slots:
        by_device.setdefault(slot.env["CUDA_VISIBLE_DEVICES"], set()).add(id(slot.gate))
    assert all(len(gates) == 1 for gates in by_device.values())
    assert len({id(s.gate) for s in slots}) == 2


def test_timing_takes_the_device_lock_file_that_spares_hold_while_creating_their_context(tmp_path):
    import fcntl
    import os

    from geak_evaluator_triton import devices
    from geak_evaluator_triton.devices import DeviceGate

    path = str(tmp_path / "gpu0.lock")
    open(path, "w").close()
    gate = DeviceGate(lock_file=path)
    spare = os.open(path, os.O_RDWR)
    fcntl.flock(spare, fcntl.LOCK_SH)  # a spare creating its CUDA context
    release = threading.Timer(0.3, lambda: os.close(spare))
    release.start()
    began = time.monotonic()
    gate.acquire_exclusive()
    waited = time.monotonic() - began
    assert 0.25 <= waited < devices.LOCK_FILE_WAIT_S
    probe = os.open(path, os.O_RDWR)
    with pytest.raises(BlockingIOError):  # a spare starting now waits for the timing
        fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    gate.release_exclusive()
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    # A holder that never lets go delays timing by at most LOCK_FILE_WAIT_S.
    began = time.monotonic()
    gate._take_file(wait_s=0.2)
    assert time.monotonic() - began < 1.0
    gate._drop_file()
    os.close(probe)


def test_a_slot_without_a_spare_takes_one_of_another_slot_of_its_device():
    from geak_evaluator_triton.child_pool import DEVICE_LOCK_VARIABLE, Children
    from geak_evaluator_triton.devices import Runtime, gpu_slots
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    slots = gpu_slots("nvidia", ["0", "1"], 2)
    assert all(s.gate.lock_file and DEVICE_LOCK_VARIABLE.startswith("GEAK_") for s in slots)
    children = Children(TritonEvaluatorOptions(spare_children="on"))
    children.runtime = Runtime("gpu", "full", "gpu", "nvidia", slots)
    first, other_device = slots[0], slots[1]
    same_device = next(s for s in slots[1:] if s.gate is first.gate)
    marker = _FakeSpare(ready=False)
    children._spares = {same_device.index: marker}  # type: ignore[dict-item]
    assert children._take_spare(other_device) == (None, None)
    assert children._take_spare(first) == (marker, same_device)
    assert children._spares == {}


class _FakeSpare:
    def __init__(self, ready: bool) -> None:
        self._ready = ready

    def ready(self) -> bool:
        return self._ready


def test_a_spare_that_is_up_is_taken_before_one_still_starting():
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.devices import Runtime, gpu_slots
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    slots = gpu_slots("nvidia", ["0"], 3)
    children = Children(TritonEvaluatorOptions(spare_children="on"))
    children.runtime = Runtime("gpu", "full", "gpu", "nvidia", slots)
    starting, up = _FakeSpare(ready=False), _FakeSpare(ready=True)
    children._spares = {slots[0].index: starting, slots[2].index: up}  # type: ignore[dict-item]
    assert children._take_spare(slots[0]) == (up, slots[2])
    assert children._take_spare(slots[0]) == (starting, slots[0])  # still better than none


def test_settling_waits_until_every_slot_has_a_spare_that_is_up():
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.devices import Runtime, gpu_slots
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    slots = gpu_slots("nvidia", ["0"], 2)
    children = Children(TritonEvaluatorOptions(spare_children="on"))
    children.runtime = Runtime("gpu", "full", "gpu", "nvidia", slots)
    starting = _FakeSpare(ready=False)
    children._spares = {slots[0].index: _FakeSpare(ready=True)}  # type: ignore[dict-item]
    assert not children.settle(0.2)  # the second slot has none yet
    children._spares[slots[1].index] = starting  # type: ignore[assignment]
    threading.Timer(0.3, lambda: setattr(starting, "_ready", True)).start()
    began = time.monotonic()
    assert children.settle(10.0)
    assert 0.25 < time.monotonic() - began < 5.0
    off = Children(TritonEvaluatorOptions(spare_children="off"))
    off.runtime = children.runtime
    assert off.settle(0.0)  # no spares to wait for


def test_the_first_two_spares_start_at_once_and_the_others_once_those_are_ready(monkeypatch):
    from geak_core.kit import sandbox
    from geak_evaluator_triton import child_pool as children_module
    from geak_evaluator_triton.child_pool import FIRST_WAVE, Children
    from geak_evaluator_triton.devices import Runtime, Slot
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    slots = [Slot(i, {"TRITON_INTERPRET": "1"}, f"cpu worker {i}") for i in range(4)]
    children = Children(TritonEvaluatorOptions(spare_children="on"))
    children.runtime = Runtime("interpreter", "small", "cpu", None, slots)
    spawned: list[tuple[float, sandbox.SpareChild]] = []

    def spawn(env, *, preload=(), isolate=False, **settings):  # a real spare whose start-up takes 0.5 s
        spare = sandbox.start_spare(env, preload=("time",), isolate=False)
        assert spare is not None
        spare.slow_until = time.monotonic() + 0.5  # type: ignore[attr-defined]
        spawned.append((time.monotonic(), spare))
        return spare

    real_ready = sandbox.SpareChild.ready
    monkeypatch.setattr(sandbox.SpareChild, "ready",
                        lambda self: time.monotonic() >= self.slow_until and real_ready(self))
    monkeypatch.setattr(children_module, "start_spare", spawn)
    try:
        children.start_spares()
        deadline = time.monotonic() + 60
        while len(children._spares) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert FIRST_WAVE == 2 and sorted(children._spares) == [0, 1, 2, 3]
        began = [t for t, _ in spawned]
        assert began[1] - began[0] < 0.45  # the first wave together
        assert began[2] - began[1] >= 0.45  # the rest once the first wave is up
        assert began[3] - began[2] < 0.45  # and then together
        assert all(s.alive() for _, s in spawned)  # up and waiting for a job
    finally:
        children.close()
    assert all(not s.alive() for _, s in spawned)


def test_at_most_runs_per_gpu_candidate_runs_hold_the_device_and_references_are_not_capped():
    from geak_evaluator_triton.devices import DeviceGate

    gate = DeviceGate(max_capped=2)
    gate.acquire_shared(capped=True)
    gate.acquire_shared(capped=True)
    entered: list[str] = []

    def third_run() -> None:
        gate.acquire_shared(capped=True)
        entered.append("third run")
        gate.release_shared(capped=True)

    def reference() -> None:
        gate.acquire_shared()
        entered.append("reference")
        gate.release_shared()

    runner, ref = threading.Thread(target=third_run), threading.Thread(target=reference)
    runner.start()
    ref.start()
    ref.join(5)
    time.sleep(0.05)
    assert entered == ["reference"]  # the reference got in; the third run waits for a free place
    gate.release_shared(capped=True)
    runner.join(5)
    assert entered == ["reference", "third run"]
    gate.release_shared(capped=True)


def test_each_gpu_child_gets_a_share_of_the_cpus_for_its_thread_pools():
    from geak_evaluator_triton.devices import gpu_slots

    slots = gpu_slots("nvidia", ["0", "1"], 4, runs_per_gpu=2, cpus=16)
    assert {s.env["OMP_NUM_THREADS"] for s in slots} == {"2"}
    assert all(s.gate.max_capped == 2 for s in slots)
    assert gpu_slots("nvidia", ["0"], 8, cpus=4)[0].env["OMP_NUM_THREADS"] == "1"


def test_cases_that_weigh_little_in_the_aggregate_need_less_precision():
    from geak_evaluator_triton.timing_loop import MAX_CASE_CI, targets

    estimates = {"big": 9.0, "small": 0.99, "tiny": 0.01}
    names = list(estimates)
    by_time = targets(estimates, names, 0.005, "sum")
    assert by_time["big"] == pytest.approx(0.005 / math.sqrt(0.9))
    assert by_time["big"] < by_time["small"] < by_time["tiny"] == MAX_CASE_CI
    # The aggregate's error stays within the target: sqrt(sum (w_i e_i)^2) <= target.
    weights = {"big": 0.9, "small": 0.099, "tiny": 0.001}
    assert math.sqrt(sum((weights[n] * by_time[n]) ** 2 for n in weights)) <= 0.005
    equal = targets(estimates, names, 0.005, "equal")
    assert list(equal.values()) == pytest.approx([0.005 * math.sqrt(3)] * 3)
    assert targets(estimates, names, 0.0, "sum") == {"big": 0.0, "small": 0.0, "tiny": 0.0}


def test_the_median_interval_shrinks_with_samples_and_needs_six():
    from geak_evaluator_triton.timed_calls import median_interval

    assert math.isinf(median_interval([1.0] * 5))
    noisy = sorted(1.0 + 0.01 * ((i * 37) % 11 - 5) for i in range(200))
    few = sorted(noisy[::20])
    assert 0 < median_interval(noisy) < median_interval(few)
    assert median_interval([2.0] * 40) == 0.0


def test_only_the_first_timed_case_gets_the_full_warm_up():
    from geak_evaluator_triton.timed_calls import LATER_WARMUP_SHARE, warmup_for

    assert warmup_for(10.0, 0) == 10.0
    assert warmup_for(10.0, 1) == warmup_for(10.0, 6) == 10.0 * LATER_WARMUP_SHARE < 10.0
    assert warmup_for(0.0, 3) == 0.0


def test_a_summation_order_difference_within_the_reference_error_passes_and_a_bigger_one_fails():
    from geak_evaluator_triton.value_compare import compare_values

    expected = torch.zeros(4, 8)
    expected[2] = 1000.0  # a row grown by outliers
    noise = torch.full((4, 1), 1e-6)
    noise[2] = 0.02  # the reference's own error on that row, against the oracle
    close = expected.clone()
    close[2, 3] += 0.05  # within 4 x 0.02 of the reference, far beyond atol
    assert compare_values(expected, close, {"float32": [0.01, 0.0]}, noise=noise) == []
    off = expected.clone()
    off[0, 0] += 0.05  # the same error on a row where the reference is exact
    found = compare_values(expected, off, {"float32": [0.01, 0.0]}, noise=noise)
    assert found and found[0]["count"] == 1 and "reference's own error" in found[0]["message"]
    assert compare_values(expected, close, {"float32": [0.01, 0.0]}, noise=noise, multiple=0.0)


def test_row_noise_is_the_largest_error_per_row_and_ignores_what_does_not_line_up():
    from geak_evaluator_triton.child_jobs import row_noise

    out = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    oracle = torch.tensor([[1.0, 2.5], [3.0, float("inf")]], dtype=torch.float64)
    noise = row_noise({"y": out, "n": torch.tensor([1, 2])}, {"y": oracle, "n": torch.tensor([1, 2])})
    eps = torch.finfo(torch.float32).eps
    assert noise["y"][0].item() == 0.5
    # An infinite error gives no allowance beyond the floor: one unit in the last place of
    # the row's largest value.
    assert noise["y"][1].item() == pytest.approx(4.0 * eps)
    assert noise["n"] is None


@pytest.mark.parametrize("choice", ["on"])
def test_a_spare_child_takes_the_job_and_the_verdict_is_the_same(mini_tasks, choice):
    from pathlib import Path

    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator

    task = mini_tasks["add"]
    judge = TritonEvaluator(judge_options(workers=1, spare_children=choice, secret_seeds=0))
    try:
        judge.runtime()
        deadline = time.monotonic() + 60
        while not judge.children._spares and time.monotonic() < deadline:
            time.sleep(0.2)
        assert judge.children._spares, "a spare child was started for the slot"
        spare = next(iter(judge.children._spares.values()))
        code = Path(task.reference).read_text()
        result = judge.evaluate(task, Candidate(id="c", task_id="add", code=code))
        assert result.correct, result.reason
        assert spare.proc.poll() is not None  # it took the job and ended
    finally:
        judge.close()
    assert judge.children._spares == {}


def test_the_fast_closeness_test_agrees_with_isclose_on_every_special_value():
    import itertools

    from geak_evaluator_triton.value_compare import _not_close

    values = [0.0, 1.0, -1.0, 1.004, 1.02, math.inf, -math.inf, math.nan, 1e30, -3.0]
    expected = torch.tensor([e for e, _ in itertools.product(values, values)])
    actual = torch.tensor([a for _, a in itertools.product(values, values)])
    for atol, rtol in [(5e-3, 5e-3), (0.0, 0.0), (1e-2, 0.0), (0.0, 1e-2)]:
        bad, _ = _not_close(expected.clone(), actual.clone(), atol, rtol)
        assert torch.equal(bad, ~torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))


def test_the_papers_mean_of_ratios_can_be_the_headline_speedup():
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    assert TritonEvaluatorOptions(speedup_method="mean_ratio").validate() == []
    assert TritonEvaluatorOptions(speedup_method="median").validate()


class _Channel:
    """A child's end of the channel: records what is sent, answers from a list."""

    def __init__(self, events: list, answers: list) -> None:
        self.events = events
        self.answers = list(answers)

    def send(self, frame: dict) -> None:
        self.events.append(("sent", frame.get("kind"), frame.get("case")))

    def receive(self) -> dict:
        answer = self.answers.pop(0)
        self.events.append(("received", next(iter(answer)), None))
        return answer


class _Keeping(_Channel):
    """A channel that also keeps the last frame sent."""

    def send(self, frame: dict) -> None:
        super().send(frame)
        self.last = frame


class _PrefetchingHarness:
    def __init__(self, events: list) -> None:
        self.events = events

    def prefetch(self, case, seed) -> None:
        self.events.append(("prefetch", case.name, seed))

    def make_inputs(self, case, seed, device):
        return {"x": torch.full((2,), float(seed))}

    def allocate(self, case, inputs):
        return {"y": torch.empty(2)}

    def run(self, module, case, inputs, outputs):
        outputs["y"].copy_(inputs["x"] * 2)


def test_a_child_prefetches_each_runs_inputs_before_it_asks_for_the_device():
    from types import SimpleNamespace

    from geak_core.api.tasks import Case
    from geak_evaluator_triton.child_jobs import run_plan

    events: list = []
    cases = {n: Case(name=n, params={}) for n in ("a", "b")}
    plan = {"seeds": [3], "stage1": ["a", "b"], "gate": True}
    channel = _Channel(events, [{"go": True}, {"go": True}])
    assert run_plan(SimpleNamespace(outliers=None), _PrefetchingHarness(events), None, cases, plan,
                    channel, guard=None)
    assert events == [
        ("prefetch", "a", 3), ("sent", "start", "a"), ("received", "go", None), ("sent", "ran", "a"),
        ("sent", "run", "a"),
        ("prefetch", "b", 3), ("sent", "start", "b"), ("received", "go", None), ("sent", "ran", "b"),
        ("sent", "run", "b"),
    ]


def test_a_failing_prefetch_is_left_for_make_inputs_to_report():
    from geak_evaluator_triton.child_jobs import prefetch

    class Broken:
        def prefetch(self, case, seed):
            raise RuntimeError("no disk")

    prefetch(Broken(), None, 0)  # ignored here: the run's make_inputs raises it where it is reported
    prefetch(object(), None, 0)  # a harness without the hook


def test_timing_prefetches_the_sides_inputs_before_the_judge_holds_the_device():
    from types import SimpleNamespace

    from geak_evaluator_triton.timed_calls import await_timing

    events: list = []
    cases = [SimpleNamespace(name=n) for n in ("p0", "p1")]
    channel = _Channel(events, [{"prepare": {"seed": 99}}, {"time": {"seed": 99}}])
    assert await_timing(channel, _PrefetchingHarness(events), cases) == 99
    assert events == [
        ("received", "prepare", None),
        ("prefetch", "p0", 99), ("prefetch", "p1", 99),
        ("sent", "prepared", None), ("received", "time", None),
    ]
    aborted = _Channel([], [{"prepare": {"seed": 99}}, {"abort": True}])
    assert await_timing(aborted, _PrefetchingHarness([]), cases) is None
    assert await_timing(_Channel([], [{"abort": True}]), _PrefetchingHarness([]), cases) is None


def test_a_gated_run_frees_the_device_before_its_outputs_travel():
    """With ``gate``, the child says ``ran`` once the run (and its rerun) is over and the
    outputs are on the host; the judge lets the device go then, not once the (large)
    ``run`` frame has arrived. Without ``gate`` there is no ``ran``."""
    from types import SimpleNamespace

    from geak_core.api.tasks import Case
    from geak_evaluator_triton.child_jobs import run_plan

    cases = {"c": Case(name="c", params={})}
    plan = {"seeds": [3], "stage1": ["c"], "gate": True, "determinism": True}
    gated = _Keeping([], [{"go": True}])
    assert run_plan(SimpleNamespace(outliers=None), _PrefetchingHarness([]), None, cases, plan, gated, guard=None)
    assert [e[1] for e in gated.events if e[0] == "sent"] == ["start", "ran", "run"]
    assert gated.last["outputs"]["y"].device.type == "cpu" and gated.last["outputs"]["y"].tolist() == [6.0, 6.0]
    assert gated.last["rerun"]["y"].tolist() == [6.0, 6.0]
    ungated = _Keeping([], [])
    run_plan(SimpleNamespace(outliers=None), _PrefetchingHarness([]), None, cases, {**plan, "gate": False},
             ungated, guard=None)
    assert [e[1] for e in ungated.events if e[0] == "sent"] == ["start", "run"]


def test_the_judge_releases_the_gate_on_ran():
    from geak_evaluator_triton.candidate_run import Gating
    from geak_evaluator_triton.devices import DeviceGate, Slot
    from geak_evaluator_triton.reference_store import _ReferenceFrames

    class Replier:
        def send(self, message) -> None:
            pass

        def judge_waiting(self):
            import contextlib

            return contextlib.nullcontext()

    gating = Gating(Slot(0, {}, "GPU 0", DeviceGate(1)), shared_runs=True)
    frames = _ReferenceFrames(SimpleTask(), gating)
    frames(({"kind": "start", "stage": "stage1", "case": "c", "seed": 1}), Replier())
    assert gating.holding == "shared"
    frames({"kind": "ran", "stage": "stage1", "case": "c", "seed": 1}, Replier())
    assert gating.holding is None
    assert gating.slot.gate.acquire_shared(capped=True) < 1.0  # the one run slot is free again
    gating.slot.gate.release_shared(capped=True)
    # A compile inside the reference's run (an autotuner's configs) lets the device go too,
    # and the run holds it again when it resumes.
    frames({"kind": "start", "stage": "stage1", "case": "c", "seed": 2}, Replier())
    frames({"kind": "compiling", "stage": "stage1", "case": "c", "seed": 2}, Replier())
    assert gating.holding is None and gating.slot.gate.acquire_exclusive() < 1.0
    gating.slot.gate.release_exclusive()
    frames({"kind": "start", "stage": "stage1", "case": "c", "seed": 2, "resume": True}, Replier())
    assert gating.holding == "shared"


class SimpleTask:
    key = "mini/add"


def test_the_devices_are_asked_of_the_driver_here_and_of_a_child_only_as_a_fallback(monkeypatch):
    from geak_core.kit.sandbox import SandboxResult
    from geak_evaluator_triton import evaluator as module
    from geak_evaluator_triton.child_jobs import device_facts

    gpu = {"torch": "t", "triton": "x", "cuda": "12", "hip": None, "interpreter": False, "gpu": True,
           "devices": [{"name": "Test GPU", "arch": "sm_90", "capability": [9, 0], "memory_gib": 80.0,
                        "multiprocessors": 132}]}
    asked: list[str] = []

    def child_run(job, args, env, **kwargs):
        asked.append(job)
        returned = dict(gpu, devices=[dict(gpu["devices"][0], name="Child GPU")])
        return SandboxResult(returncode=0, messages=[{"$return": returned}])

    judge = module.TritonEvaluator(judge_options(mode="gpu", spare_children="off"))
    monkeypatch.setattr(judge.children, "run", child_run)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(module, "device_facts", lambda **_: gpu)
    runtime = judge._resolve_runtime()
    assert (runtime.device_name, asked) == ("Test GPU", [])  # no child on the first verdict's path
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in runtime.slots] == ["0"] * judge.options.candidates_per_gpu

    # The judge's process sees no GPU, or runs the interpreter itself: the child is asked.
    monkeypatch.setattr(module, "device_facts", lambda **_: dict(gpu, gpu=False, devices=[]))
    assert judge._resolve_runtime().device_name == "Child GPU" and asked == ["probe"]
    monkeypatch.setattr(module, "device_facts", lambda **_: gpu)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert judge._resolve_runtime().device_name == "Child GPU" and asked == ["probe", "probe"]

    # Without a GPU the facts are the versions alone (what a CPU machine's child reports).
    facts = device_facts(gpu=False)
    assert facts["torch"] == torch.__version__ and facts["devices"] == [] and facts["interpreter"]


def test_a_guarded_gated_run_and_its_rerun_each_let_the_device_go_while_compiling():
    """The compile release is entered afresh for the run and for its determinism rerun (a
    compile in each gives ``compiling`` then a resumed ``start``), and a run's seconds leave
    out its wait for the device after the compile."""
    from types import SimpleNamespace

    from geak_core.api.tasks import Case
    from geak_evaluator_triton.child_jobs import COMPILE_RELEASE, run_plan

    class Compiling(_PrefetchingHarness):
        def run(self, module, case, inputs, outputs):
            COMPILE_RELEASE.before_compile(key=case.name)  # what Triton's hooks call
            COMPILE_RELEASE.after_compile(key=case.name)
            super().run(module, case, inputs, outputs)

    class Guard:
        def before_run(self, inputs):
            return None

        def after_run(self, before, inputs, objects):
            return {"launches": {"candidate": 1}}

    cases = {"c": Case(name="c", params={})}
    plan = {"seeds": [3], "stage1": ["c"], "gate": True, "determinism": True}
    channel = _Keeping([], [{"go": True}] * 3)
    assert run_plan(SimpleNamespace(outliers=None), Compiling([]), None, cases, plan, channel, guard=Guard())
    assert [e[1] for e in channel.events if e[0] == "sent"] == [
        "start", "compiling", "start", "compiling", "start", "ran", "run"]
    assert channel.last["rerun"]["y"].tolist() == [6.0, 6.0] and channel.last["run_s"] >= 0
    assert COMPILE_RELEASE.channel is None  # inactive outside the run


def test_a_run_that_holds_the_device_long_does_not_keep_other_runs_out_while_timing_waits():
    """Timing waiting for the device keeps new runs out only while every run holding it is
    short: one run holding it past ``long_hold_s`` (a slow host loop, a compile Triton's hooks
    do not see) would otherwise stop every slot of the device until it ends."""
    from geak_evaluator_triton.devices import DeviceGate

    gate = DeviceGate()
    gate.long_hold_s = 0.3
    events: list[str] = []
    gate.acquire_shared(holder="slow run")

    def timing() -> None:
        gate.acquire_exclusive()
        events.append("timing")
        gate.release_exclusive()

    def other_run() -> None:
        gate.acquire_shared(holder="other")
        events.append("other run")
        time.sleep(0.05)
        events.append("other run ends")
        gate.release_shared(holder="other")

    waiting = threading.Thread(target=timing)
    waiting.start()
    time.sleep(0.05)  # timing waits for the slow run
    began = time.monotonic()
    other = threading.Thread(target=other_run)
    other.start()
    other.join(5)
    # the other run got in once the slow run had held the device 0.3 s, not when it ended
    assert events == ["other run", "other run ends"] and 0.15 < time.monotonic() - began < 1.0
    gate.release_shared(holder="slow run")
    waiting.join(5)
    assert events[-1] == "timing"

    # Runs let in so do not keep the way open: once the run that was there before timing
    # is done, timing waits only for them, and later runs wait for timing.
    gate = DeviceGate()
    gate.long_hold_s = 0.2
    order: list[str] = []
    gate.acquire_shared(holder="slow run")
    waiting = threading.Thread(target=lambda: (gate.acquire_exclusive(), order.append("timing"),
                                               gate.release_exclusive()))
    waiting.start()
    time.sleep(0.05)
    gate.acquire_shared(holder="let in")  # after 0.2 s of the slow run
    gate.release_shared(holder="slow run")
    time.sleep(0.3)  # "let in" has now held the device longer than long_hold_s itself
    later = threading.Thread(target=lambda: (gate.acquire_shared(holder="later"), order.append("later run"),
                                             gate.release_shared(holder="later")))
    later.start()
    time.sleep(0.3)
    assert order == []  # timing waits for "let in" only; "later" waits for timing
    gate.release_shared(holder="let in")
    waiting.join(5)
    later.join(5)
    assert order == ["timing", "later run"]

    # While the holders are short, timing keeps new runs out (it is not starved).
    gate = DeviceGate()
    gate.long_hold_s = 5.0
    order: list[str] = []
    gate.acquire_shared(holder="short run")
    waiting = threading.Thread(target=lambda: (gate.acquire_exclusive(), order.append("timing"),
                                               gate.release_exclusive()))
    waiting.start()
    time.sleep(0.05)
    late = threading.Thread(target=lambda: (gate.acquire_shared(holder="late"), order.append("late run"),
                                            gate.release_shared(holder="late")))
    late.start()
    time.sleep(0.1)
    assert order == []
    gate.release_shared(holder="short run")
    waiting.join(5)
    late.join(5)
    assert order == ["timing", "late run"]
