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


@pytest.mark.parametrize("snippet, words", [
    # frame introspection, in every spelling the rules read
    ("import inspect\nf = inspect.currentframe()", "inspect.currentframe (frame introspection)"),
    ("import inspect\nf = inspect.stack()", "inspect.stack (frame introspection)"),
    ("import inspect as i\nf = i.trace()", "inspect.trace (frame introspection)"),
    ("from inspect import getouterframes as outer", "'getouterframes' from 'inspect'"),
    ("import inspect\nf = getattr(inspect, 'stack')", "inspect.stack"),
    ("import inspect\nf = getattr(inspect, 'st' + 'ack')", "getattr(inspect, ...) with a computed name"),
    ("import inspect\nm = inspect\nm.stack()", "holds the module inspect as a value"),
    ("from inspect import *", "imports * from 'inspect'"),
    ("import traceback\ns = traceback.extract_stack()", "traceback.extract_stack (frame introspection)"),
    ("import traceback as tb\nw = tb.walk_stack(None)", "traceback.walk_stack (frame introspection)"),
    ("import sys as s\nf = s._getframe(1)", "sys._getframe (frame introspection)"),
    ("from sys import _getframe", "'_getframe' from 'sys'"),
    ("import sys\nf = sys._current_frames()", "sys._current_frames (frame introspection)"),
    ("def g():\n    yield 1\nx = g().ag_frame", ".ag_frame (frame introspection)"),
    # the object graph
    ("import torch.cuda.graphs\no = torch.cuda.graphs.gc.get_objects()", "get_objects (walking the object graph"),
    ("r = x.get_referrers(1)", ".get_referrers (walking the object graph"),
    ("r = x.get_referents(1)", ".get_referents (walking the object graph"),
    # sys, gc, inspect ... reached as an attribute of another module, however spelled
    ("import torch\nm = torch.sys.modules", "reaches the module sys as torch.sys"),
    ("import numpy as np\ns = np.sys", "reaches the module sys as numpy.sys"),
    ("import triton.runtime.jit\ni = triton.runtime.jit.sys", "reaches the module sys as triton.runtime.jit.sys"),
    ("import os\ns = os.sys", "reaches the module sys as os.sys"),
    ("import torch\ns = getattr(torch, 'sys')", "reaches the module sys as torch.sys"),
    ("import torch\ns = vars(torch)['inspect']", "reaches the module inspect as torch.inspect"),
    ("import torch\ns = torch.__dict__['traceback']", "reaches the module traceback as torch.traceback"),
    ("from torch import sys", "reaches the module sys as torch.sys"),
    ("import torch\nx = torch.os.system('true')", "reaches the module os as torch.os"),
    ("import operator, torch\ns = operator.attrgetter('sys.modules')(torch)", "'sys' by a written name"),
    ("import torch\ns = object.__getattribute__(torch, 'sys')", "__getattribute__"),
    ("from sys import modules", "'modules' from 'sys': it uses sys.modules"),
    ("import sys as s\nm = s.modules", "sys.modules"),
    ("import sys\ndef f(m):\n    pass\nf(sys)", "holds the module sys as a value"),
    # modules imported by a name written out
    ("g = __import__('gc')", "imports 'gc' by name through __import__()"),
    ("i = __import__('inspect')", "imports 'inspect' by name through __import__() (frame introspection)"),
    ("import torch\ng = torch.importlib.import_module('gc')", "imports 'gc' by name through import_module()"),
    ("import torch\ng = getattr(torch, 'importlib')", "reaches the module importlib as torch.importlib"),
    ("from os import system", "'system' from 'os': it calls os.system"),
])
def test_the_doors_into_the_judges_objects_are_rejected_with_their_line(snippet, words):
    finding = check_source(KERNEL + snippet + "\n")
    assert finding is not None and finding.stage == "anticheat", snippet
    assert words in finding.reason, finding.reason
    assert finding.line is not None and finding.line >= 7 and f"line {finding.line}:" in finding.reason


@pytest.mark.parametrize("snippet", [
    "import sys\nprint('x', file=sys.stderr)\nn = sys.maxsize\nv = getattr(sys, 'maxsize')",
    "import torch\nx = torch.stack([torch.ones(1)])\nd = getattr(torch, 'float16')",
    "import os\np = os.path.join('a', 'b')\ne = os.environ.get('X')",
    "import traceback\ntry:\n    pass\nexcept Exception:\n    traceback.print_exc()",
    "import inspect\nsig = inspect.signature(k)",
    "import torch\nw = torch.signal.windows.hann(8)",
    "from triton.language import core\nimport triton.language as tl\nz = tl.zeros",
])
def test_honest_uses_of_the_same_modules_pass(snippet):
    assert check_source(KERNEL + snippet + "\n") is None


def test_no_honest_kernel_of_the_repository_is_rejected_as_a_cheat():
    """``bench/static_honest.py``: the suites' references and tasks, the test suite's references,
    the TritonBench and KernelBench-X fixtures, the retriever's corpus, the examples."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "static_honest.py"
    spec = importlib.util.spec_from_file_location("static_honest", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    counts, lines = bench.judge([bench.ROOT / folder for folder in bench.HONEST])
    assert counts["anticheat"] == 0, lines
    assert counts["accepted"] >= 80, counts  # the references, fixtures and corpus all read
