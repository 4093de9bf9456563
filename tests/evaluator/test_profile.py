"""Profiling in the judge: a correct candidate runs on its largest timed case in a child of its
own, started by the profiler's tool in the sandbox of every candidate child; what the tool
wrote is read by the profiler; every failure is the record's ``error``, never an exception.

The tool here is ``minisuite.profiling``'s stand-in: a real executable that starts the child,
records what it was given and writes a CSV of made-up counters."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import pytest
from geak_core.api.model import Candidate
from geak_core.api.profiling import KernelCounters
from judge_support import FIXTURES
from minisuite.profiling import FakeProfiler, FakeProfilerOptions, write_tool

REFERENCES = FIXTURES / "minisuite" / "references"

# Calls the add kernel as asked once (the warm-up), then never returns: it hangs in the
# profiled region.
ADD_HANGS_WHEN_PROFILED = '''
import time

import triton
import triton.language as tl

_calls = []


def _second_call_hangs(args):  # evaluated at each launch, before the kernel runs
    _calls.append(1)
    while len(_calls) > 1:
        time.sleep(0.1)
    return 1


@triton.heuristics({"UNUSED": _second_call_hangs})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, UNUSED: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)
'''


def _add(code: str | None = None) -> Candidate:
    return Candidate("add-candidate", "add", code or (REFERENCES / "add.py").read_text())


def _profiler(tmp_path: Path, **options) -> FakeProfiler:
    return FakeProfiler(FakeProfilerOptions(tool=write_tool(tmp_path), **options))


@pytest.mark.slow
def test_a_correct_candidate_is_profiled_under_the_tool_in_its_sandbox(judge, mini_tasks, tmp_path, monkeypatch):
    """A tool without region support sees the warm-up call too: the record keeps the last
    kernels named like the profiled calls' Triton launches."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-reach-the-tool")
    keep = tmp_path / "seen"
    profiler = _profiler(tmp_path, kernels="add_kernel,memset,add_kernel", keep=str(keep),
                         in_child="minisuite.profiling:mark_region")
    profiler.options.in_child = ""  # first without the in-child hook: the warm-up is filtered out
    record = judge.profile(mini_tasks["add"], _add(), profiler, 60)
    assert record.ok, record.error
    assert record.profiler == "fake" and record.candidate_id == "add-candidate"
    assert record.case == "n100_float32", "the largest timed case of the interpreter's small set"
    assert [(k.name, k.duration_us) for k in record.kernels] == [("add_kernel", 12.0)]
    assert record.kernels[0].dram_pct == 71.5 and record.diagnosis is None
    argv = json.loads((keep / "argv.json").read_text())
    env = json.loads((keep / "env.json").read_text())
    assert argv[argv.index("--") + 1:][:2] == [__import__("sys").executable, "-I"], "the tool ran the child"
    assert "OPENAI_API_KEY" not in env and "sk-must-not" not in json.dumps(env)
    job = str(Path(argv[1]).parent)
    assert Path(job).name.startswith("geak-sbx-") and env["TMPDIR"].startswith(job + "/")
    assert env["FAKE_PROF_OUT"] == argv[1] and not Path(job).exists()
    assert "fake-prof: profiling" in (keep / "output.txt").read_text(), "what the tool printed is read"

    profiler.options.in_child = "minisuite.profiling:mark_region"
    record = judge.profile(mini_tasks["add"], _add(), profiler, 60, case="n64_float16", calls=2)
    assert record.ok and record.case == "n64_float16" and record.calls == 2
    assert len(record.kernels) == 3, "an in-child tool records only the region: nothing is dropped"
    assert (keep / "in_child.txt").read_text() == "entered\nleft\n"


@pytest.mark.slow
def test_a_candidate_that_hangs_when_profiled_ends_at_the_budget(judge, mini_tasks, tmp_path):
    started = time.monotonic()
    record = judge.profile(mini_tasks["add"], _add(ADD_HANGS_WHEN_PROFILED), _profiler(tmp_path), 12)
    assert not record.ok and "ran out of its budget of 12 s" in record.error and "timed out" in record.error
    assert record.seconds < 12 + 10 and time.monotonic() - started < 12 + 15


@pytest.mark.slow
def test_a_tool_output_the_profiler_cannot_read_is_the_records_error(judge, mini_tasks, tmp_path):
    record = judge.profile(mini_tasks["add"], _add(), _profiler(tmp_path, figures="garbage"), 60)
    assert record.error == ("the profiler's output could not be read: kernels.csv line 2: "
                            "could not convert string to float: 'fast'")
    assert record.kernels == () and record.case == "n100_float32"


def test_an_unusable_profiler_or_a_missing_tool_runs_nothing_and_says_why(judge, mini_tasks, tmp_path):
    record = judge.profile(mini_tasks["add"], _add(), _profiler(tmp_path, unusable_because="no GPU to count on"), 60)
    assert record.error == "no GPU to count on" and record.profiler == "fake"
    missing = FakeProfiler(FakeProfilerOptions(tool=str(tmp_path / "nowhere" / "ncu")))
    record = judge.profile(mini_tasks["add"], _add(), missing, 60)
    assert "is not installed here" in record.error and "nowhere/ncu" in record.error


class ProtocolOnly:
    """A profiler written against the protocol alone (no ``ProfilerBase``)."""

    def launch(self):
        from geak_core.api.profiling import ProfileLaunch

        return ProfileLaunch()

    def read(self, out, output):
        return [KernelCounters("k")]


def test_profilers_pickle_for_judge_processes_and_a_filled_one_is_filled_again(tmp_path):
    from geak_core.api.components import as_component

    profiler = _profiler(tmp_path, kernels="a,b")
    again = pickle.loads(pickle.dumps(profiler))
    assert again.options == profiler.options and again.launch() == profiler.launch()
    restored = pickle.loads(pickle.dumps(as_component("profiler", ProtocolOnly())))
    assert restored.unusable() == [] and restored.read("", "") == [KernelCounters("k")]


def test_the_profiled_kernels_of_a_tool_without_region_are_the_last_that_match():
    from geak_evaluator_triton.profile_run import region_kernels, same_kernel

    seen = [KernelCounters(n, duration_us=d) for n, d in
            [("add_kernel", 1), ("void add_kernel(float*, float*)", 2), ("memset", 3), ("add_kernel_0d1d2d", 4),
             ("add_kernel.kd", 5), ("add_kernelx", 6)]]
    assert [k.duration_us for k in region_kernels(seen, ["add_kernel", "add_kernel"])] == [4, 5]
    assert region_kernels(seen, []) == seen
    assert same_kernel("void add_kernel(float*)", "add_kernel") and not same_kernel("add_kernelx", "add_kernel")
