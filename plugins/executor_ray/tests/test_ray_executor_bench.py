"""bench/executor_throughput.py: its candidates differ inside their kernels, and its --help
documents every argument (the script itself runs on a CPU or a GPU machine)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from ray_support import ROOT

BENCH = ROOT / "bench" / "executor_throughput.py"
_spec = importlib.util.spec_from_file_location("executor_throughput", BENCH)
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)
distinct = _bench.distinct


def test_each_copy_gets_its_own_comment_inside_the_first_kernel():
    code = (ROOT / "plugins" / "suite_rocm" / "geak_suite_rocm" / "references" / "softmax.py").read_text()
    first, second = distinct(code, 1), distinct(code, 2)
    assert first != second and first.replace("# copy 1", "# copy 2") == second
    kernel = first[first.index("@triton.jit"):]
    signature_end = kernel.index("):\n") + 3
    assert kernel[signature_end:].lstrip(" ").startswith("# copy 1\n")


def test_a_file_without_a_jitted_kernel_gets_the_comment_at_its_end():
    assert distinct("x = 1\n", 3) == "x = 1\n\n# copy 3\n"


def test_help_documents_every_argument():
    out = subprocess.run([sys.executable, str(BENCH), "--help"], capture_output=True, text=True,
                         timeout=60).stdout
    for argument in ("--tasks", "--candidates", "--workers", "--executors", "--mode", "--address",
                     "--gpus-per-judge", "--cpus-per-judge", "--timeout", "--json"):
        assert argument in out
    assert "evaluations per minute" in out.lower() and "--mode gpu" in out
