"""Every cheat in tests/fixtures/cheats is rejected, with a reason that names the cheat."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow


def rejected(verdicts, name):
    result = verdicts[f"cheat:{name}"]
    assert not result.correct, f"{name} was accepted"
    assert result.reason, f"{name} was rejected without a reason"
    assert "judge_error" not in result.flags, result.reason
    return result


def test_a_module_without_any_triton_kernel_is_rejected_before_running(verdicts):
    result = rejected(verdicts, "add_no_kernel")
    assert result.failed_stage == "contract"
    assert "no Triton kernel" in result.reason


def test_an_entry_point_that_is_not_a_jit_kernel_is_rejected(verdicts):
    result = rejected(verdicts, "add_fake_entry")
    assert result.failed_stage == "contract"
    assert "must be a @triton.jit kernel" in result.reason


def test_reexporting_the_reference_kernel_is_rejected(verdicts):
    result = rejected(verdicts, "add_reference_kernel")
    assert result.failed_stage == "contract"
    assert "not in the candidate's own code" in result.reason


def test_calling_the_reference_kernel_as_a_device_function_is_rejected(verdicts):
    result = rejected(verdicts, "add_borrowed_device_fn")
    assert result.failed_stage == "contract"
    assert "calls the Triton function" in result.reason


def test_launching_a_kernel_that_is_not_the_candidates_own_is_rejected(verdicts):
    result = rejected(verdicts, "scale_foreign_kernel")
    assert result.failed_stage == "anticheat"
    assert "not the candidate's own" in result.reason
    assert "_scale_kernel" in result.reason


def test_torch_compute_in_a_launch_hook_is_rejected(verdicts):
    result = rejected(verdicts, "add_heuristic_compute")
    assert result.failed_stage == "anticheat"
    assert "computed with torch" in result.reason
    assert "aten.add" in result.reason


def test_torch_compute_in_a_wrapper_is_rejected(verdicts):
    result = rejected(verdicts, "scale_torch_compute")
    assert result.failed_stage == "anticheat"
    assert "aten.mul" in result.reason


def test_computing_through_numpy_views_is_rejected(verdicts):
    result = rejected(verdicts, "scale_numpy")
    assert result.failed_stage == "anticheat"
    assert "Tensor.numpy()" in result.reason
    assert "no Triton kernel defined in the candidate was launched" in result.reason


def test_replaying_a_cached_answer_fails_on_fresh_seeds(verdicts):
    result = rejected(verdicts, "scale_cache")
    assert result.call_ok
    assert result.failed_stage == "stage1"
    assert "seed 0" not in result.reason.split(";")[0], "the first seed is computed honestly"
    assert result.mismatches and result.mismatches[0]["count"] > 0


def test_replacing_comparison_and_timing_functions_at_import_is_rejected(verdicts):
    result = rejected(verdicts, "add_monkeypatch")
    assert result.failed_stage == "anticheat"
    for name in ("torch.allclose", "triton.testing.do_bench", "time.perf_counter"):
        assert name in result.reason


def test_replacing_a_function_while_running_is_rejected(verdicts):
    result = rejected(verdicts, "add_patch_during_run")
    assert result.failed_stage == "anticheat"
    assert "torch.equal" in result.reason


def test_importing_threading_is_rejected_statically(verdicts):
    result = rejected(verdicts, "scale_thread")
    assert result.failed_stage == "anticheat"
    assert "threading" in result.reason


def test_a_background_thread_left_running_is_rejected_at_run_time(mini_tasks):
    """The runtime thread check stands on its own when static checks are off."""
    from geak_core.api.model import Candidate
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import cheat_code, judge_options

    evaluator = TritonEvaluator(judge_options(static_checks=False, workers=1, secret_seeds=0))
    try:
        result = evaluator.evaluate(
            mini_tasks["scale"], Candidate(id="thread", task_id="scale", code=cheat_code("scale_thread"))
        )
    finally:
        evaluator.close()
    assert not result.correct
    assert result.failed_stage == "anticheat"
    assert "thread" in result.reason


def test_an_output_left_unwritten_keeps_its_poison_and_fails(verdicts):
    result = rejected(verdicts, "add_unwritten")
    assert result.failed_stage == "stage1"
    assert "got nan" in result.reason


def test_returning_an_uninitialised_buffer_fails(verdicts):
    result = rejected(verdicts, "scale_empty")
    assert result.failed_stage == "stage1"


def test_mutating_an_input_is_rejected(verdicts):
    result = rejected(verdicts, "add_mutate_inputs")
    assert result.failed_stage == "anticheat"
    assert "modified its input(s) y" in result.reason


def test_results_that_change_between_identical_runs_are_rejected(verdicts):
    result = rejected(verdicts, "add_nondeterministic")
    assert "results differ between two runs on the same inputs" in result.reason


def test_a_precision_downgrade_passes_stage_one_but_fails_on_outliers(verdicts):
    result = rejected(verdicts, "rowsum_fp16")
    assert result.failed_stage == "stage2"
    assert "inf" in result.reason


def fingerprint(window: bytes) -> list:
    """What add_snoop looks for: a 24-bit tag of the first four bytes, and the SHA-256."""
    import hashlib

    word = int.from_bytes(window[:4], "little")
    return [((word * 0x9E3779B1) & 0xFFFFFFFF) >> 8, hashlib.sha256(window).hexdigest()]


def test_the_candidate_process_can_read_no_reference_output(judge, mini_tasks):
    """Nothing the candidate can see (env, its dirs, judge dirs, fds) holds reference bytes.

    The candidate is given fingerprints of the first 64 bytes of every reference output and
    reports only where it found them, so the verdict does not depend on how many files it
    could read. A fingerprint of its own source's last 64 bytes must be found (in the module
    file the judge wrote): the scan reads what it says it reads.
    """
    import json

    from geak_core.api.model import Candidate
    from judge_support import cheat_code

    task = mini_tasks["add"]
    reference = judge.reference(task)
    code = cheat_code("add_snoop")
    targets = {"control": fingerprint(code.encode()[-64:])}
    for number, outputs in enumerate(reference.outputs.values()):
        raw = outputs["out"].contiguous().view(-1).numpy().tobytes()
        assert len(raw) >= 64 and raw[:64] != bytes(64), "the needle must be distinctive"
        targets[f"reference {number}"] = fingerprint(raw[:64])
    assert code.count("\nTARGETS = {}\n") == 1
    code = code.replace("\nTARGETS = {}\n", f"\nTARGETS = {json.dumps(targets)}\n")
    runtime = judge.runtime()
    slot = runtime.slots[0]
    candidate = Candidate(id="snoop", task_id="add", code=code)
    sandbox = judge._run_candidate(task, candidate, runtime, slot, reference)
    assert sandbox.completed, sandbox.describe_exit()
    line = next(ln for ln in sandbox.stdout.splitlines() if ln.startswith("SNOOP"))
    seen = json.loads(line[len("SNOOP"):])
    files, env = seen["files"], seen["env"]
    assert any("control" in names for names in files["found"].values()), files
    assert files["bytes"] >= len(code) and env["variables"] > 0
    references = {path: [n for n in names if n != "control"] for path, names in files["found"].items()}
    assert not any(references.values()), references
    assert not env["found"], env["found"]
    assert not files["marker"] and not env["marker"], (files["marker"], env["marker"])
    assert all(target.startswith("pipe:") for target in seen["fds"].values()), seen["fds"]


def test_setting_a_triton_launch_hook_is_rejected_at_import(verdicts):
    result = rejected(verdicts, "add_launch_hook")
    assert result.failed_stage == "anticheat"
    assert "triton.knobs.runtime.launch_enter_hook" in result.reason


def test_reaching_sys_modules_through_getattr_is_rejected_statically(verdicts):
    result = rejected(verdicts, "add_pre_run_hook")
    assert result.failed_stage == "anticheat"
    assert "sys.modules" in result.reason and "line 15" in result.reason


@pytest.mark.parametrize("name, words, line", [
    ("scale_frame_stack", "inspect.stack (frame introspection)", 25),
    ("scale_frame_traceback", "traceback.walk_stack (frame introspection)", 29),
    ("scale_getframe_import", "imports '_getframe' from 'sys'", 10),
    ("scale_object_graph", "get_objects (walking the object graph", 25),
    ("scale_sys_through_torch", "reaches the module sys as torch.sys", 17),
    ("scale_import_by_name", "imports 'gc' by name through import_module()", 15),
])
def test_the_doors_into_the_judges_timing_objects_are_shut_statically(verdicts, name, words, line):
    """Frames, the object graph, and sys, gc, importlib reached through another module: each
    fixture goes after the judge's timing objects in its own process by a door the static rules
    once missed, and is rejected before it runs."""
    result = rejected(verdicts, name)
    assert result.failed_stage == "anticheat"
    assert words in result.reason and f"line {line}:" in result.reason, result.reason
    assert not result.call_ok  # nothing of it ran


def test_a_candidate_cannot_write_outside_its_own_folder(mini_tasks, tmp_path):
    """Writes into the judge's source, a run store, the judge's Triton cache and the user's
    home are refused; the files stay as they were, and the verdict says why."""

    from geak_core.api.model import Candidate
    from geak_core.kit.confinement import landlock_abi
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from judge_support import judge_options, targeted_cheat

    if not landlock_abi():
        pytest.skip("this kernel offers no Landlock: the judge refuses to run (tested in test_sandbox.py)")
    import geak_evaluator_triton.static_checks as judge_source

    runs = tmp_path / "runs" / "run-1"
    runs.mkdir(parents=True)
    (runs / "summary.json").write_text("{}\n")
    evaluator = TritonEvaluator(judge_options(workers=1, secret_seeds=0,
                                              triton_cache_dir=str(tmp_path / "triton")))
    cache_file = os.path.join(evaluator.children.cache_dir("reference"), "kept.json")
    with open(cache_file, "w") as handle:
        handle.write("{}\n")
    home_file = os.path.expanduser(f"~/.geak-candidate-test-{os.getpid()}")
    targets = [judge_source.__file__, str(runs / "summary.json"), cache_file, home_file]
    before = {path: open(path, "rb").read() for path in targets[:3]}
    code = targeted_cheat("add_writes_outside", targets)
    try:
        result = evaluator.evaluate(mini_tasks["add"], Candidate(id="writer", task_id="add", code=code))
    finally:
        evaluator.close()
    assert {path: open(path, "rb").read() for path in before} == before
    assert not os.path.exists(home_file)
    assert not result.correct and result.failed_stage == "import", result.reason
    assert "Permission denied" in result.reason and "sandbox refused" in result.reason, result.reason
    assert "static_checks.py" in result.reason


def test_dynamic_spellings_of_forbidden_attributes_are_caught():
    from geak_evaluator_triton.static_checks import check_source

    kernel = "import triton\n\n@triton.jit\ndef k(x):\n    pass\n"
    caught = {
        'import sys\nm = getattr(sys, "modules")': "sys.modules",
        'import os\nf = vars(os)["system"]': "os.system",
        'import os\nf = os.__dict__["fork"]': "os.fork",
        'import os\nf = getattr(os, "sys" + "tem")': "computed name",
        'import sys\nf = vars(sys)': "vars(sys)",
        'f = getattr(check, "__globals__")': "__globals__",
        'b = globals()["__builtins__"]': "'__builtins__' by name",
    }
    for code, expected in caught.items():
        finding = check_source(kernel + code)
        assert finding is not None and finding.stage == "anticheat", code
        assert expected in finding.reason, (code, finding.reason)
    for fine in ('import torch\nd = getattr(torch, "float16")', 'import os\nv = os.environ.get("X")',
                 'g = globals()\nname = g.get("k")'):
        assert check_source(kernel + fine) is None, fine
