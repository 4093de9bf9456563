"""The judge on a real GPU: timing, speedups and the timing cheats (skipped without a GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU"),
]


@pytest.fixture(scope="module")
def gpu_judge():
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    evaluator = TritonEvaluator(judge_options(mode="gpu", workers=1, rep_ms=50.0))
    yield evaluator
    evaluator.close()


def test_the_reference_against_itself_is_correct_and_about_as_fast(gpu_judge, mini_tasks):
    from geak_core.api.model import Candidate

    task = mini_tasks["add"]
    result = gpu_judge.evaluate(task, Candidate(id="ref", task_id="add", code=open(task.reference).read()))
    assert result.correct, result.reason
    assert result.mode == "gpu" and result.performance_measured, result.performance_note
    assert all(s.reference_ms and s.candidate_ms for s in result.shapes)
    assert 0.5 < result.speedup < 2.0
    assert result.speedup_sum is not None and result.speedup_geomean is not None
    assert "suspicious_speedup" not in result.flags


def test_a_task_with_a_pytorch_eager_equivalent_gets_a_speedup_against_it(gpu_judge, mini_tasks):
    from geak_core.api.model import Candidate

    task = mini_tasks["add"]  # its harness's eager: x + y in torch
    result = gpu_judge.evaluate(task, Candidate(id="ref-eager", task_id="add", code=open(task.reference).read()))
    assert result.correct and result.performance_measured, result.reason
    assert all(s.eager_ms and s.speedup_vs_eager for s in result.shapes), result.performance_note
    assert "no PyTorch eager latency" not in result.performance_note
    # torch's add and ours move the same bytes: neither is many times faster than the other
    assert 0.2 < result.speedup_vs_eager < 5.0


def test_work_hidden_on_a_side_stream_is_not_credited(gpu_judge, mini_tasks):
    from geak_core.api.model import Candidate
    from judge_support import cheat_code

    result = gpu_judge.evaluate(mini_tasks["add"], Candidate(id="side", task_id="add",
                                                             code=cheat_code("add_side_stream")))
    # Work left on another stream is not in the outputs the checks queued behind the call see
    # (rejected: seen on an H200), or is flagged and charged by the gap, or lands inside the
    # events anyway; in no case does it earn a speedup.
    rejected = not result.correct and "outputs of the timed calls" in (result.reason or "")
    assert rejected or "timing_mismatch" in result.flags or (
        result.speedup is not None and result.speedup < 1.0), (result.reason, result.shapes)
    assert result.speedup is None or result.speedup < 1.5


def test_a_candidate_that_stops_working_once_timed_is_rejected(gpu_judge, mini_tasks):
    from geak_core.api.model import Candidate
    from judge_support import cheat_code

    result = gpu_judge.evaluate(mini_tasks["add"], Candidate(id="lazy", task_id="add",
                                                             code=cheat_code("add_lazy_when_timed")))
    assert not result.correct
    assert result.failed_stage == "anticheat"
    assert "outputs of the timed calls" in result.reason
    assert result.speedup is None


def test_hardware_is_detected_from_the_device_name(gpu_judge):
    """On every GPU: the profile whose patterns match the device's name is the one resolved,
    and a device no bundled profile matches gets none (never another chip's peaks)."""
    from geak_core.engine.plugins import get_plugin_manager

    gpu_judge.runtime()
    profile = gpu_judge.resolve_hardware()
    name = torch.cuda.get_device_name(0)
    bundled = [spec.build(None) for spec in get_plugin_manager().components("hardware_profile").values()]
    matching = [p for p in bundled if p.matches(name)]
    print(name, "->", profile.name if profile else None)
    if matching:
        assert profile is not None and profile.name == matching[0].name
    else:
        assert profile is None


def test_large_inputs_are_drawn_on_the_gpu_deterministically():
    from geak_core.api.harness import DEVICE_DRAW_MIN, generator, rand, randint, randn

    shape = (DEVICE_DRAW_MIN // 512, 1024)
    first = randn(shape, torch.float16, "cuda", generator(7))
    again = randn(shape, torch.float16, "cuda", generator(7))
    other = randn(shape, torch.float16, "cuda", generator(8))
    assert first.device.type == "cuda" and first.dtype == torch.float16
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert abs(float(first.float().std()) - 1.0) < 0.01
    u = rand(shape, torch.float32, "cuda", generator(7), low=2.0, high=3.0)
    assert float(u.min()) >= 2.0 and float(u.max()) < 3.0
    i = randint(shape, -5, 5, torch.int8, "cuda", generator(7))
    assert int(i.min()) == -5 and int(i.max()) == 4


def test_the_queue_ahead_hold_is_calibrated_to_the_clock():
    from geak_evaluator_triton.timed_calls import cycles_per_us

    cycles = int(cycles_per_us() * 200.0)
    assert cycles > 0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    assert 100.0 < start.elapsed_time(end) * 1e3 < 400.0


def test_timing_prepared_when_correct_costs_a_wrong_candidate_nothing(mini_tasks):
    """prepare_timing = when_correct (auto's choice for a busy judge): a wrong candidate
    costs no reference timing runs; the correct one is timed in its own child once found
    correct (the reference's timed runs and the baseline's timer are made ready then)."""
    from geak_core.api.components import EvalJob
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import cheat_code, judge_options

    task = mini_tasks["add"]
    evaluator = TritonEvaluator(judge_options(mode="gpu", workers=1, rep_ms=50.0,
                                              prepare_timing="when_correct"))
    try:
        jobs = [EvalJob(task, Candidate(id="wrong", task_id="add", code=cheat_code("add_unwritten"))),
                EvalJob(task, Candidate(id="right", task_id="add", code=open(task.reference).read()))]
        results = {job.candidate.id: result for job, result in evaluator.evaluate_many(jobs)}
    finally:
        evaluator.close()
    wrong, right = results["wrong"], results["right"]
    assert not wrong.correct and "reference.timing" not in wrong.phases, wrong.phases
    assert right.correct and right.performance_measured, (right.reason, right.performance_note)
    assert "timing.prepare" in right.phases, right.phases
    assert 0.5 < right.speedup < 2.0


def test_the_judge_learns_its_devices_without_creating_a_cuda_context():
    """The judge's process asks the driver for the devices' properties (``device_facts``):
    that must leave the device's primary context inactive (no memory, no time slices)."""
    import json
    import subprocess
    import sys

    if torch.version.hip:
        pytest.skip("checks the CUDA driver's primary context")
    script = (
        "import ctypes, json, time\n"
        "started = time.monotonic()\n"
        "from geak_evaluator_triton.child_jobs import device_facts\n"
        "facts = device_facts(gpu=True)\n"
        "seconds = time.monotonic() - started\n"
        "cuda = ctypes.CDLL('libcuda.so.1')\n"
        "device, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()\n"
        "assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), 0) == 0\n"
        "status = cuda.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active))\n"
        "print(json.dumps({'status': status, 'active': active.value, 'seconds': seconds,\n"
        "                  'name': facts['devices'][0]['name']}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    print(found)
    assert found["status"] == 0 and found["active"] == 0, found
    assert found["name"] == torch.cuda.get_device_name(0)


# ---------------------------------------------------------------------------
# Timing that a candidate cannot inflate (one fixture per class of cheat)
# ---------------------------------------------------------------------------


def _judge(judge, task, name, code=None):
    from geak_core.api.model import Candidate
    from judge_support import cheat_code

    return judge.evaluate(task, Candidate(id=name, task_id=task.id, code=code or cheat_code(name)))


def test_work_done_only_in_calls_that_look_different_is_caught(gpu_judge, mini_tasks):
    result = _judge(gpu_judge, mini_tasks["add"], "add_idle_probe")
    assert not result.correct and result.failed_stage == "anticheat", (result.reason, result.shapes)
    assert "outputs of the timed calls" in result.reason
    assert result.speedup is None


def test_torch_compute_while_timed_is_rejected(gpu_judge, mini_tasks):
    result = _judge(gpu_judge, mini_tasks["add"], "add_torch_when_timed")
    assert not result.correct and result.failed_stage == "anticheat", result.reason
    assert "while being timed" in result.reason and "aten.add" in result.reason


def test_a_launch_hook_is_rejected_at_import(mini_tasks):
    """Setting one of Triton's runtime hooks is a guard finding at import (it would reach the
    baseline's launches if the baseline were timed in the candidate's process; it is not)."""
    result = _judge_fresh(mini_tasks["add"], "add_launch_hook")
    assert not result.correct and "launch_enter_hook" in result.reason


def test_hooks_on_the_baseline_kernel_find_no_baseline_to_slow_down(mini_tasks):
    """With static checks off, the candidate looks for the baseline's module in its own
    process: it is not there, so its speedup is an honest kernel's."""
    result = _judge_fresh(mini_tasks["add"], "add_pre_run_hook", static_checks=False)
    assert result.correct and result.performance_measured, (result.reason, result.performance_note)
    assert 0.6 < result.speedup < 1.3, result.shapes


def test_a_replayed_result_faster_than_the_hardware_is_rejected(gpu_judge, mini_tasks):
    profile = gpu_judge.resolve_hardware()
    if profile is None:  # a GPU no bundled profile knows: its measured copy bandwidth as the peak
        import dataclasses

        from geak_hw_nvidia_hopper.profiles import H100

        profile = dataclasses.replace(H100, name="measured", peak_bandwidth_gbs=_copy_bandwidth_gbs())
        gpu_judge.set_hardware(profile)
    result = _judge(gpu_judge, mini_tasks["scale"], "scale_replay")
    print(result.reason, [(s.case, s.roofline_fraction) for s in result.shapes])
    assert "above_peak" in result.flags
    assert not result.correct and result.failed_stage == "anticheat" and "device's peak" in result.reason


def test_a_candidate_on_the_gpu_cannot_write_outside_its_folder(mini_tasks, tmp_path):
    import os

    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options, targeted_cheat

    project_file = os.path.join(os.path.dirname(__file__), "judge_support.py")
    evaluator = TritonEvaluator(judge_options(mode="gpu", workers=1, rep_ms=50.0,
                                              triton_cache_dir=str(tmp_path / "triton")))
    cache_file = os.path.join(evaluator.children.cache_dir("reference"), "kept.json")
    open(cache_file, "w").write("{}\n")
    home_file = os.path.expanduser(f"~/.geak-gpu-candidate-test-{os.getpid()}")
    targets = [project_file, cache_file, home_file]
    before = {p: open(p, "rb").read() for p in targets[:2]}
    code = targeted_cheat("add_writes_outside", targets)
    try:
        result = evaluator.evaluate(mini_tasks["add"], Candidate(id="writer", task_id="add", code=code))
    finally:
        evaluator.close()
    assert {p: open(p, "rb").read() for p in before} == before and not os.path.exists(home_file)
    assert not result.correct and "sandbox refused" in result.reason, result.reason


def _judge_fresh(task, name, **options):
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options

    evaluator = TritonEvaluator(judge_options(mode="gpu", workers=1, rep_ms=50.0, **options))
    try:
        return _judge(evaluator, task, name)
    finally:
        evaluator.close()


def _copy_bandwidth_gbs() -> float:
    source = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    target.copy_(source)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        target.copy_(source)
    end.record()
    torch.cuda.synchronize()
    return 10 * 2 * source.numel() / (start.elapsed_time(end) * 1e-3) / 1e9
