"""The judge on a real GPU: timing, speedups and the side-stream cheat (skipped without a GPU)."""

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
    from geak_core.model import Candidate

    task = mini_tasks["add"]
    result = gpu_judge.evaluate(task, Candidate(id="ref", task_id="add", code=open(task.reference).read()))
    assert result.correct, result.reason
    assert result.mode == "gpu" and result.performance_measured, result.performance_note
    assert all(s.reference_ms and s.candidate_ms for s in result.shapes)
    assert 0.5 < result.speedup < 2.0
    assert result.speedup_sum is not None and result.speedup_geomean is not None
    assert "suspicious_speedup" not in result.flags


def test_a_task_with_a_pytorch_eager_equivalent_gets_a_speedup_against_it(gpu_judge, mini_tasks):
    from geak_core.model import Candidate

    task = mini_tasks["add"]  # its harness's eager: x + y in torch
    result = gpu_judge.evaluate(task, Candidate(id="ref-eager", task_id="add", code=open(task.reference).read()))
    assert result.correct and result.performance_measured, result.reason
    assert all(s.eager_ms and s.speedup_vs_eager for s in result.shapes), result.performance_note
    assert "no PyTorch eager latency" not in result.performance_note
    # torch's add and ours move the same bytes: neither is many times faster than the other
    assert 0.2 < result.speedup_vs_eager < 5.0


def test_work_hidden_on_a_side_stream_is_not_credited(gpu_judge, mini_tasks):
    from geak_core.model import Candidate
    from judge_support import cheat_code

    result = gpu_judge.evaluate(mini_tasks["add"], Candidate(id="side", task_id="add",
                                                             code=cheat_code("add_side_stream")))
    # The hidden work is either caught by the wall-clock cross-check (flagged and charged)
    # or lands inside the timed region anyway; in both cases it earns no speedup.
    # (Seen on an H100: the events covered the side-stream work, speedup 0.09.)
    assert "timing_mismatch" in result.flags or (result.speedup is not None and result.speedup < 1.0), (
        result.reason, result.shapes)
    assert result.speedup is None or result.speedup < 1.5


def test_a_candidate_that_stops_working_once_timed_is_rejected(gpu_judge, mini_tasks):
    from geak_core.model import Candidate
    from judge_support import cheat_code

    result = gpu_judge.evaluate(mini_tasks["add"], Candidate(id="lazy", task_id="add",
                                                             code=cheat_code("add_lazy_when_timed")))
    assert not result.correct
    assert result.failed_stage == "anticheat"
    assert "outputs of the timed runs" in result.reason
    assert result.speedup is None


def test_hardware_is_detected_from_the_device_name(gpu_judge):
    gpu_judge.runtime()
    profile = gpu_judge.resolve_hardware()
    name = torch.cuda.get_device_name(0)
    if any(key in name for key in ("H100 80GB HBM3", "H200", "MI300X", "MI250", "MI210")):
        assert profile is not None and profile.matches(name)


def test_large_inputs_are_drawn_on_the_gpu_deterministically():
    from geak_core.harness import DEVICE_DRAW_MIN, generator, rand, randint, randn

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
    from geak_evaluator_triton.gputiming import _cycles_per_us

    cycles = int(_cycles_per_us() * 200.0)
    assert cycles > 0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    assert 100.0 < start.elapsed_time(end) * 1e3 < 400.0


def test_timing_prepared_when_correct_costs_a_wrong_candidate_nothing(mini_tasks):
    """prepare_timing = when_correct (auto's choice for a busy judge): a wrong candidate
    costs no reference timing runs; the correct one is checked, then checked and timed in a
    second child."""
    from geak_core.components import EvalJob
    from geak_core.model import Candidate
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
    assert "candidate.first_check" in right.phases and "reference.timing" in right.phases, right.phases
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
        "from geak_evaluator_triton.child import device_facts\n"
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
