"""Static checks: what the judge rejects without running the candidate."""

from __future__ import annotations

import pytest
from geak_evaluator_triton.static_checks import check_source

KERNEL = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n"


def test_a_module_with_a_jit_kernel_passes():
    assert check_source(KERNEL) is None
    assert check_source("from triton import jit\n@jit\ndef k(x):\n    pass\n") is None


def test_a_syntax_error_is_an_import_failure_with_its_line():
    finding = check_source("def broken(:\n")
    assert finding.stage == "import" and finding.line == 1
    assert finding.reason.startswith("syntax error at line 1")


def test_a_module_without_a_kernel_breaks_the_contract():
    finding = check_source("import torch\n\ndef add(x, y):\n    return x + y\n")
    assert finding.stage == "contract"


@pytest.mark.parametrize("snippet, words", [
    ("import ctypes", "ctypes"),
    ("import gc", "gc"),
    ("from subprocess import run", "subprocess"),
    ("import geak_core.api.harness", "geak_core"),
    ("import geak_suite_rocm", "judge's own packages"),
    ("import importlib", "importlib"),
    ("import sys\nf = sys._getframe()", "_getframe"),
    ("import sys\nm = sys.modules", "sys.modules"),
    ("def f():\n    pass\nc = f.__code__", "__code__"),
    ("import os\nos.system('true')", "os.system"),
    ("exec('1')", "exec()"),
    ("b = __builtins__", "__builtins__"),
])
def test_forbidden_constructs_are_rejected_with_their_line(snippet, words):
    finding = check_source(KERNEL + snippet + "\n")
    assert finding is not None and finding.stage == "anticheat"
    assert words in finding.reason
    assert finding.line is not None and finding.line >= 7


def test_forbidden_constructs_can_be_allowed():
    assert check_source(KERNEL + "import gc\n", forbid_constructs=False) is None


def test_an_import_of_a_triton_api_this_triton_lacks_fails_at_import_before_other_checks():
    from geak_evaluator_triton.static_checks import check_source

    kernel = "import triton\n@triton.jit\ndef k(x):\n    pass\n"
    removed = "import multiprocessing\nfrom triton.language import no_such_name_here\n" + kernel
    finding = check_source(removed)
    assert finding is not None and finding.stage == "import" and finding.line == 2
    assert "'no_such_name_here'" in finding.reason and "triton.language" in finding.reason
    missing_module = "import triton.no_such_module\n" + kernel
    finding = check_source(missing_module)
    assert finding is not None and finding.stage == "import" and "triton.no_such_module" in finding.reason
    # Names and submodules that exist pass; other packages are not looked up.
    fine = ("from triton.language import core\nfrom triton import language\n"
            "import triton.language as tl\nfrom numpy import no_such_numpy_name\n" + kernel)
    assert check_source(fine) is None
