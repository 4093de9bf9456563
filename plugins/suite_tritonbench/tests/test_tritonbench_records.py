"""Candidate code from other systems' output records."""

from __future__ import annotations

from geak_suite_tritonbench.records import code_from_reply
from tritonbench_paths import SEPARATOR

KERNEL = "import triton\n\n@triton.jit\ndef k(x):\n    pass\n\n\ndef relu(x):\n    return x\n"


def test_code_in_a_fence_is_taken_from_the_prose_around_it():
    reply = f"Here is the kernel:\n```python\n{KERNEL}```\nIt computes ReLU."
    assert code_from_reply(reply, ["relu"]).strip() == KERNEL.strip()


def test_a_repeated_test_part_after_the_separator_is_dropped():
    reply = KERNEL + SEPARATOR + "\ndef test_relu():\n    return relu(1)\nresult_gold = test_relu()\n"
    code = code_from_reply(reply, ["relu"])
    assert "def relu" in code and "test_relu" not in code and SEPARATOR not in code


def test_an_empty_reply_has_no_code():
    assert code_from_reply("   \n") is None


def test_the_suite_reads_the_code_of_a_record_for_its_task(make_suite):
    record = {"file": "relu_kernel.py", "predict": f"```python\n{KERNEL}```"}
    assert "def relu" in make_suite().record_code(record)


def test_a_record_without_a_reply_has_no_code(make_suite):
    assert make_suite().record_code({"file": "relu_kernel.py"}) is None


REPLY_WITH_OWN_TEST = (
    "```python\n" + KERNEL + "\ndef test_relu():\n    return relu(1)\n\n"
    "result = test_relu()\ntest_relu()\nprint(result)\n```"
)


def test_the_published_protocol_drops_the_models_own_module_level_test_calls(make_suite):
    code = make_suite().record_code({"file": "relu_kernel.py", "predict": REPLY_WITH_OWN_TEST})
    lines = code.splitlines()
    assert "result = test_relu()" not in lines and "test_relu()" not in lines
    assert "def test_relu():" in lines and "print(result)" in lines
    assert len(lines) == len(code_from_reply(REPLY_WITH_OWN_TEST, ["relu"]).splitlines())


def test_the_strict_protocol_keeps_the_reply_as_written(make_suite):
    record = {"file": "relu_kernel.py", "predict": REPLY_WITH_OWN_TEST}
    assert "result = test_relu()" in make_suite(protocol="strict").record_code(record)


def test_a_record_of_an_unusable_task_resolves_to_it_and_its_code_is_still_read(make_suite):
    record = {"file": "bad_syntax.py", "predict": f"```python\n{KERNEL}```"}
    suite = make_suite()
    assert suite.resolve_record(record) == "bad_syntax"
    assert "def relu" in suite.record_code(record)
