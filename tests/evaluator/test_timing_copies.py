"""The timed inputs' copies (``gputiming.input_copies``): equal values in other places."""

from __future__ import annotations

import torch
from geak_evaluator_triton.gputiming import COPY_LIMIT_BYTES, input_copies


def test_copies_hold_equal_values_strides_and_alignment_at_other_addresses():
    base = torch.arange(64 * 48, dtype=torch.float32).reshape(64, 48)
    inputs = {"x": base, "w": torch.randn(48, 32).t(), "n": 7, "pair": (torch.ones(5), 2.0)}
    copies = input_copies(inputs, 4)
    assert len(copies) == 4 and copies[0] is inputs
    for other in copies[1:]:
        assert other["n"] == 7 and other["pair"][1] == 2.0
        for name in ("x", "w"):
            assert torch.equal(other[name], inputs[name])
            assert other[name].stride() == inputs[name].stride()  # column-major stays column-major
            assert other[name].data_ptr() != inputs[name].data_ptr()
            assert other[name].data_ptr() % 16 == 0
        assert other["pair"][0].data_ptr() != inputs["pair"][0].data_ptr()
    assert len({c["x"].data_ptr() for c in copies}) == 4


def test_what_cannot_be_copied_faithfully_is_shared_or_left_alone():
    buffer = torch.zeros(1024)
    # two views of one buffer: the copies would lose the aliasing, so nothing is copied
    views = {"a": buffer[:512], "b": buffer[512:]}
    assert [c is views for c in input_copies(views, 4)] == [True]
    # a view 4 bytes into its buffer is not 16-byte aligned: shared, not moved to an aligned place
    odd = torch.zeros(1025)[1:]
    copies = input_copies({"odd": odd, "y": torch.ones(8)}, 3)
    assert all(c["odd"] is odd for c in copies) and copies[1]["y"].data_ptr() != copies[0]["y"].data_ptr()
    # an expanded tensor (stride 0) cannot be cloned with its strides: shared
    wide = torch.ones(1, 16).expand(8, 16)
    assert all(c["wide"] is wide for c in input_copies({"wide": wide}, 2))
    # large inputs stay in their one place, and one copy asked is no copy
    big = torch.empty(COPY_LIMIT_BYTES // 4 + 1)
    assert len(input_copies({"big": big}, 4)) == 1
    assert len(input_copies({"y": torch.ones(8)}, 1)) == 1
