"""Code extraction from realistic, messy model replies."""

from __future__ import annotations

import ast
import json

from geak_core.api.extract import extract_code

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
'''

KERNEL_ONLY = KERNEL.split("\n\ndef add(")[0] + "\n"
WRAPPER_ONLY = "def add(" + KERNEL.split("\n\ndef add(")[1]


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.rstrip()}\n```"


def defines(code: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef)}


# -- JSON (GEAK's reply format) ----------------------------------------------


def test_json_reply_gives_code_and_strategy():
    reply = json.dumps({"strategy": "One program per 1024 elements; masked tail.", "code": KERNEL})
    found = extract_code(reply)
    assert found is not None
    assert found.code == KERNEL
    assert found.strategy == "One program per 1024 elements; masked tail."
    assert found.how == "json"


def test_json_inside_a_json_fence_with_prose_around_it():
    body = json.dumps({"strategy": "vectorise", "code": KERNEL}, indent=2)
    reply = f"Sure! Here is my answer:\n\n```json\n{body}\n```\n\nLet me know if you need more."
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL and found.strategy == "vectorise"


def test_json_with_raw_newlines_in_strings_is_read():
    reply = '{"strategy": "fuse the two loads",\n "code": "' + KERNEL.replace('"', '\\"') + '"}'
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_json_with_invalid_escapes_is_read_leniently():
    code = 'import re\n\ndef parse(s):\n    return re.findall("\\d+", s)\n'
    reply = '```json\n{"strategy": "regex", "code": "' + code.replace("\n", "\\n") + '"}\n```'
    json_invalid = True
    try:
        json.loads(reply.strip("`json\n"))
        json_invalid = False
    except ValueError:
        pass
    assert json_invalid
    found = extract_code(reply)
    assert found is not None
    assert found.code == code
    assert found.strategy == "regex"


def test_json_with_unescaped_quotes_and_prose_after_it_is_read_leniently():
    code = 'import triton\n\n@triton.jit\ndef k(x_ptr):\n    names = {"a": "b"}\n'
    reply = '{"strategy": "keep it "simple"", "code": "' + code + '"}\n\nHope this helps "you"}'
    found = extract_code(reply)
    assert found is not None
    assert found.code == code
    assert found.strategy == 'keep it "simple"'


def test_json_cut_off_before_its_end_keeps_the_code_received():
    reply = '```json\n{"strategy": "tile", "code": "' + KERNEL.replace("\n", "\\n").replace('"', '\\"')
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_json_code_field_holding_a_fenced_block_is_unwrapped():
    reply = json.dumps({"strategy": "s", "code": "Here it is:\n" + fence(KERNEL)})
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_json_without_a_code_field_falls_back_to_fences():
    reply = '{"status": "ok"}\n\n' + fence(KERNEL)
    found = extract_code(reply)
    assert found is not None and found.how == "fence" and found.code == KERNEL


# -- fenced blocks -------------------------------------------------------------


def test_single_block_with_prose_gives_the_code_and_the_prose_as_strategy():
    reply = (
        "To speed this up I tile the input in blocks of 1024 and mask the tail.\n\n"
        + fence(KERNEL)
        + "\n\nThis should be memory bound."
    )
    found = extract_code(reply)
    assert found is not None
    assert found.code == KERNEL and found.how == "fence"
    assert "tile the input" in found.strategy and "memory bound" in found.strategy


def test_labelled_strategy_section_is_preferred_as_strategy():
    reply = (
        "I looked at the reference.\n\n**Strategy:** process two rows per program to hide latency.\n\n"
        + fence(KERNEL)
    )
    found = extract_code(reply)
    assert found is not None
    assert found.strategy == "process two rows per program to hide latency."


def test_unlabelled_fence_is_accepted():
    found = extract_code("Answer:\n" + fence(KERNEL, lang=""))
    assert found is not None and found.code == KERNEL


def test_tilde_fence_is_accepted():
    found = extract_code("~~~py\n" + KERNEL + "~~~\n")
    assert found is not None and found.code == KERNEL


def test_kernel_and_wrapper_in_separate_blocks_are_joined():
    reply = (
        "First the kernel:\n\n" + fence(KERNEL_ONLY)
        + "\n\nThen the Python wrapper that launches it:\n\n" + fence(WRAPPER_ONLY)
    )
    found = extract_code(reply, required_names=["add_kernel", "add"])
    assert found is not None and found.how == "fences-joined"
    assert defines(found.code) == {"add_kernel", "add"}
    assert found.code.index("def add_kernel") < found.code.index("def add(")


def test_wrapper_block_is_joined_to_the_kernel_block_without_required_names():
    reply = fence(KERNEL_ONLY) + "\n\nUsage wrapper:\n" + fence(WRAPPER_ONLY)
    found = extract_code(reply)
    assert found is not None and defines(found.code) == {"add_kernel", "add"}


def test_imports_in_their_own_block_are_joined():
    imports = "import torch\nimport triton\nimport triton.language as tl\n"
    body = KERNEL.split("triton.language as tl\n", 1)[1]
    found = extract_code(fence(imports) + "\n\n" + fence(body))
    assert found is not None
    assert found.code.startswith("import torch") and "def add_kernel" in found.code


def test_later_revision_wins_over_the_earlier_version():
    old = KERNEL.replace("BLOCK=1024", "BLOCK=256")
    reply = "Original:\n" + fence(old) + "\n\nImproved version:\n" + fence(KERNEL)
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_required_names_pick_the_block_that_defines_them():
    other = KERNEL.replace("add_kernel", "mul_kernel").replace("def add(", "def mul(")
    reply = fence(KERNEL) + "\n\nFor comparison, a multiply:\n" + fence(other)
    found = extract_code(reply, required_names=["add"])
    assert found is not None and "def add(" in found.code and "mul_kernel" not in found.code


def test_usage_example_with_top_level_code_is_not_joined():
    usage = "x = torch.randn(4096, device='cuda')\ny = torch.randn(4096, device='cuda')\nprint(add(x, y))\n"
    found = extract_code(fence(KERNEL) + "\n\nExample:\n" + fence(usage))
    assert found is not None and found.code == KERNEL


def test_shell_and_output_blocks_are_ignored():
    reply = fence("pip install triton", "bash") + "\n\n" + fence(KERNEL) + "\n\n" + fence("tensor([2., 4.])", "text")
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_unterminated_final_fence_of_a_cut_off_reply_is_used():
    reply = "Here is the kernel:\n\n```python\n" + KERNEL
    found = extract_code(reply)
    assert found is not None
    assert found.how == "unterminated-fence" and found.code == KERNEL


def test_fence_reopened_without_closing_the_previous_one():
    reply = "```python\n" + KERNEL_ONLY + "\n```python\n" + WRAPPER_ONLY + "```\n"
    found = extract_code(reply, required_names=["add_kernel", "add"])
    assert found is not None and defines(found.code) == {"add_kernel", "add"}


def test_indented_block_inside_a_list_item_is_dedented():
    indented = "\n".join("   " + ln if ln else "" for ln in KERNEL.splitlines())
    reply = "1. Write the kernel:\n\n   ```python\n" + indented + "\n   ```\n"
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


def test_windows_line_endings_are_normalised():
    found = extract_code(("Kernel:\n" + fence(KERNEL)).replace("\n", "\r\n"))
    assert found is not None and found.code == KERNEL


def test_drafts_inside_think_tags_are_ignored():
    draft = KERNEL.replace("BLOCK=1024", "BLOCK=64")
    reply = "<think>\nMaybe:\n" + fence(draft) + "\nNo, bigger blocks.\n</think>\n\n" + fence(KERNEL)
    found = extract_code(reply)
    assert found is not None and found.code == KERNEL


# -- code without fences -------------------------------------------------------


def test_bare_code_with_prose_before_and_after():
    reply = "Here's the implementation.\n\n" + KERNEL + "\nThis version masks the tail block.\n"
    found = extract_code(reply)
    assert found is not None and found.how == "bare"
    assert found.code == KERNEL
    assert "masks the tail" in found.strategy


# -- nothing usable ------------------------------------------------------------


def test_prose_only_reply_gives_none():
    assert extract_code("I'm sorry, I can't help with that kernel.") is None


def test_empty_reply_gives_none():
    assert extract_code("   \n") is None


def test_reply_with_only_a_shell_block_gives_none():
    assert extract_code("Run:\n" + fence("python bench.py --size 4096", "bash")) is None


def test_json_with_an_empty_code_field_gives_none():
    assert extract_code(json.dumps({"strategy": "think more", "code": ""})) is None
