"""Reading one task file: the split, the test calls, the entry points."""

from __future__ import annotations

import ast
import textwrap

import pytest
from geak_suite_tritonbench.taskfile import (
    TaskFileError,
    entry_points,
    find_separator,
    plan_test,
    read_task_file,
    split_source,
)
from tritonbench_paths import SEPARATOR


def _file(tmp_path, kernel: str, test: str):
    path = tmp_path / "task.py"
    path.write_text(textwrap.dedent(kernel).lstrip() + SEPARATOR + "\n" + textwrap.dedent(test))
    return path


def _plan(test: str):
    return plan_test(ast.parse(textwrap.dedent(test)))


def test_the_split_happens_at_a_line_of_exactly_146_hashes():
    text = "a = 1\n" + "#" * 145 + "\n" + "#" * 147 + "\n" + SEPARATOR + "\nb = 2\n"
    kernel, test, line = split_source(text)
    assert line == 4 and test == "b = 2\n" and kernel.startswith("a = 1\n")


def test_a_file_without_separator_cannot_be_split():
    assert find_separator("x = 1\n" + "#" * 145 + "\n") is None
    with pytest.raises(TaskFileError, match="no separator line"):
        split_source("x = 1\n", "file.py")


def test_a_syntax_error_in_the_test_part_is_located_in_the_whole_file(tmp_path):
    path = _file(tmp_path, "def f(x):\n    return x\n", "def test_f(:\n    pass\n")
    with pytest.raises(TaskFileError, match=r"task.py:4: syntax error in the test part"):
        read_task_file(path)


def test_the_result_gold_line_names_the_test_function_and_is_not_executed_by_the_judge():
    plan = _plan("""
        def test_x():
            return 1
        result_gold = test_x()
    """)
    assert [(c.variable, c.function, c.expression) for c in plan.calls] == [
        ("result_gold", "test_x", "test_x()")
    ]
    assert plan.dropped == [1] and plan.result_variable == "result_gold" and not plan.quirks


def test_statements_using_the_result_are_dropped_too():
    plan = _plan("""
        import torch
        def test_x():
            return 1
        result_gold = test_x()
        print(result_gold)
        for key in result_gold:
            print(key)
        CONSTANT = 3
    """)
    assert plan.dropped == [2, 3, 4]


def test_a_differently_named_result_variable_is_kept_as_a_quirk():
    plan = _plan("""
        def test_ff():
            return 1
        result_gold_float16 = test_ff()
    """)
    assert plan.result_variable == "result_gold_float16"
    assert plan.quirks == ["result stored in result_gold_float16"]


def test_several_result_lines_are_all_called():
    plan = _plan("""
        def test_a():
            return 1
        def test_b():
            return 2
        result_a = test_a()
        result_b = test_b()
    """)
    assert [c.variable for c in plan.calls] == ["result_a", "result_b"]


def test_a_bare_call_of_the_test_stands_for_the_missing_result_line():
    plan = _plan("""
        def test_x():
            return 1
        test_x()
    """)
    assert plan.test_function == "test_x" and plan.result_variable is None
    assert plan.dropped == [1]


def test_without_any_call_the_test_functions_that_take_no_arguments_are_called():
    plan = _plan("""
        def test_x(n=3):
            return n
        def test_helper(tensor):
            return tensor
    """)
    assert [c.function for c in plan.calls] == ["test_x"]
    assert "no result line" in plan.quirks[0]


def test_a_result_line_under_a_main_guard_is_found():
    plan = _plan("""
        def test_x():
            return 1
        if __name__ == "__main__":
            result_gold = test_x()
    """)
    assert plan.test_function == "test_x" and plan.dropped == []


def test_test_functions_that_all_need_arguments_make_the_file_unusable():
    with pytest.raises(TaskFileError, match="no test function can be called without arguments"):
        _plan("def test_x(dtype):\n    return dtype\n")


def test_entry_points_include_kernels_launched_directly_by_the_test():
    kernel = ast.parse(textwrap.dedent("""
        import triton
        import triton.language as tl
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            pass
        def helper():
            pass
        class Fn:
            pass
    """))
    test = ast.parse(textwrap.dedent("""
        def test_k():
            x = 1
            k[(1,)](x, 1, BLOCK=4)
            out = Fn.apply(x)
            return x
    """))
    found = [(e.name, e.kind, e.params, e.constexpr) for e in entry_points(kernel, test)]
    assert found == [
        ("k", "triton.jit", ("x_ptr", "n", "BLOCK"), ("BLOCK",)),
        ("Fn", "function", (), ()),
    ]


def test_names_the_test_defines_itself_are_not_entry_points():
    kernel = ast.parse("def relu(x):\n    return x\n")
    test = ast.parse("def test_r():\n    relu = lambda x: x\n    return relu(1)\n")
    assert entry_points(kernel, test) == []


def test_a_test_that_calls_nothing_of_the_reference_makes_the_file_unusable(tmp_path):
    path = _file(tmp_path, "def f(x):\n    return x\n", "def test_f():\n    return 1\n")
    with pytest.raises(TaskFileError, match="calls no function defined in the reference"):
        read_task_file(path)


def _blockers(kernel: str, test: str = "def test_x():\n    return 1\n"):
    from geak_suite_tritonbench.interpreter import interpreter_blockers

    return interpreter_blockers(ast.parse(textwrap.dedent(kernel)), ast.parse(textwrap.dedent(test)))


def test_plain_kernels_and_cuda_strings_in_the_test_do_not_block_the_interpreter():
    assert _blockers("def f(x):\n    return x\n", "x = torch.ones(3, device='cuda').cuda()\n") == []


def test_libdevice_in_a_kernel_blocks_the_interpreter():
    (reason,) = _blockers("from triton.language.extra.cuda import libdevice\n")
    assert "libdevice" in reason
    assert _blockers("y = tl.extra.hip.libdevice.exp(x)\n")


def test_cuda_placement_in_the_reference_code_blocks_the_interpreter():
    assert _blockers("out = torch.empty(3, device='cuda:0')\n") == [
        "its reference code places tensors on 'cuda'"
    ]
    assert _blockers("out = x.cuda()\n")


def test_gpu_only_torch_cuda_calls_block_the_interpreter_but_harmless_ones_do_not():
    (reason,) = _blockers("torch.cuda.synchronize()\n", "torch.cuda.current_device()\n")
    assert "torch.cuda.current_device, torch.cuda.synchronize" in reason
    assert _blockers("torch.cuda.is_available()\ntorch.cuda.manual_seed(0)\n") == []


def test_bfloat16_blocks_the_interpreter():
    assert "bfloat16" in _blockers("x = 1", "y = torch.ones(2, dtype=torch.bfloat16)\n")[0]


def test_a_test_part_repeating_the_reference_drops_the_repeat_and_calls_the_candidates(tmp_path):
    kernel = "def helper(x):\n    return x\n\n\ndef relu(x):\n    return helper(x)\n"
    test = kernel + "\n\ndef test_r():\n    return relu(1)\n\n\nresult_gold = test_r()\n"
    task = read_task_file(_file(tmp_path, kernel, test))
    assert [e.name for e in task.entry_points] == ["relu"]
    assert task.plan.dropped == [0, 1, 3]
    assert any("repeats the reference's helper, relu" in q for q in task.plan.quirks)
    # a test part that only shares a name with nothing of the reference keeps its functions
    assert _plan("def own(x):\n    return x\n\ndef test_o():\n    return own(1)\n").dropped == []
