"""Code metrics per candidate (radon): cyclomatic complexity, maintainability index, lines."""

from __future__ import annotations

import pytest
from geak_core.kit.code_metrics import code_metrics

pytest.importorskip("radon")

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if n > 0:
        tl.store(x_ptr + offs, 1.0)


def launch(x, n):
    for _ in range(2):
        if n > 1 and n < 10:
            kernel[(1,)](x, n, BLOCK=16)


class Runner:
    def run(self, x):
        return launch(x, 4)
'''


def test_complexity_counts_every_function_and_method():
    m = code_metrics(KERNEL)
    # kernel: 1 + if; launch: 1 + for + if + and; Runner.run: 1
    assert m.cc_max == 4 and m.cc_mean == pytest.approx((2 + 4 + 1) / 3, abs=1e-3)
    assert 0 < m.maintainability_index <= 100
    assert m.sloc == 14  # non-blank, non-comment lines


def test_simpler_code_is_more_maintainable():
    simple = "def f(x):\n    return x + 1\n"
    assert code_metrics(simple).maintainability_index > code_metrics(KERNEL).maintainability_index


def test_code_that_does_not_parse_has_no_metrics():
    m = code_metrics("def broken(:\n")
    assert m.to_dict() == {"cc_mean": None, "cc_max": None, "maintainability_index": None, "sloc": None}
