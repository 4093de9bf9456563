"""``bench/judge_cost.py``: the distinct copies of ``--distinct`` differ inside every kernel and
nowhere else, and the script runs end to end as a subprocess (CPU smoke mode, one task)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from geak_suite_rocm.suite import REFERENCES

BENCH = Path(__file__).resolve().parents[3] / "bench" / "judge_cost.py"


def _bench_module():
    from geak_evaluator_triton.child_jobs import import_file

    return import_file("judge_cost_bench", str(BENCH))


def _decorated_sources(code: str) -> dict[str, str]:
    tree = ast.parse(code)
    lines = code.splitlines(keepends=True)
    return {node.name: "".join(lines[node.lineno - 1: node.end_lineno])
            for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.decorator_list}


@pytest.mark.parametrize("reference", ["add_kernel.py", "gemm.py", "softmax.py"])
def test_distinct_copies_differ_inside_every_kernel_and_run_the_same_code(reference):
    variant = _bench_module().distinct_variant
    code = (REFERENCES / reference).read_text()
    kernels = _decorated_sources(code)
    assert kernels
    first, second = variant(code, 1), variant(code, 2)
    for copy in (first, second):
        assert ast.dump(ast.parse(copy)) == ast.dump(ast.parse(code))  # only comments added
    one, two = _decorated_sources(first), _decorated_sources(second)
    for name, source in kernels.items():
        assert len({source, one[name], two[name]}) == 3, name  # each copy's kernel source is its own
    assert variant(code, 1) == first  # deterministic


@pytest.mark.slow
def test_the_bench_judges_one_task_cold_warm_distinct_and_fresh_distinct_copies_in_the_interpreter(tmp_path):
    out = tmp_path / "cost.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--tasks", "test_add_kernel", "--mode", "interpreter", "--parallel", "2",
         "--repeats", "1", "--self", "0", "--distinct", "--cold-parallel", "--json", str(out)],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    measured = json.loads(out.read_text())
    assert measured["environment"]["prime"]["ok"]  # torch and Triton used once before measuring
    row = measured["tasks"][0]
    assert row["complete"] and row["correct"]
    assert row["parallel_correct"] == 2 and row["distinct_parallel_correct"] == 2
    assert row["distinct_one_s"] > 0 and row["distinct_parallel_over_one"] > 0
    # a fresh judge's distinct copies: each compiles, as the cold one did
    assert row["parallel_cold_distinct"] and row["parallel_cold_correct"] == 2
    assert len(row["parallel_cold_phases"]) == 2 and row["parallel_cold_over_cold"] > 0
    assert "| test_add_kernel | True |" in proc.stdout
