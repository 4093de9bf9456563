"""tensorio: outputs cross process boundaries as data, never as pickles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from geak_core.kit import tensorio


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                   torch.float8_e4m3fn, torch.float8_e5m2, torch.int8, torch.int64,
                                   torch.uint8, torch.bool, torch.complex64])
def test_tensors_of_every_dtype_round_trip_bit_for_bit(dtype):
    source = torch.randn(3, 5).mul(4).to(dtype)
    back = tensorio.loads(tensorio.dumps(source))
    assert back.dtype == dtype and back.shape == source.shape
    assert torch.equal(back.reshape(-1).view(torch.uint8), source.reshape(-1).view(torch.uint8))


def test_non_contiguous_zero_dim_and_empty_tensors_round_trip():
    base = torch.arange(12.0).reshape(3, 4)
    for value in (base.t(), base[:, ::2], torch.tensor(7.5), torch.empty(0, 3)):
        back = tensorio.loads(tensorio.dumps(value))
        assert back.shape == value.shape and torch.equal(back, value)


def test_nested_structures_keep_their_shape_and_scalar_types():
    value = {
        "a": [torch.ones(2), (1, 2.5, None, "s", True)],
        3: {"inner": (torch.zeros(1, dtype=torch.int32),)},
        "floats": [math.nan, math.inf, -math.inf, 1e-300],
        "complex": 1 + 2j,
        "bytes": b"\x00\x01",
        "dtype": torch.bfloat16,
        "size": torch.Size([4, 5]),
        "array": np.arange(6, dtype=np.int16).reshape(2, 3),
        "npscalar": np.float32(2.5),
    }
    back = tensorio.loads(tensorio.dumps(value))
    assert isinstance(back["a"], list) and isinstance(back["a"][1], tuple)
    assert back["a"][1] == (1, 2.5, None, "s", True)
    assert torch.equal(back[3]["inner"][0], value[3]["inner"][0])
    assert math.isnan(back["floats"][0]) and back["floats"][1:] == [math.inf, -math.inf, 1e-300]
    assert back["complex"] == 1 + 2j and back["bytes"] == b"\x00\x01"
    assert back["dtype"] is torch.bfloat16 and back["size"] == (4, 5)
    assert back["array"].dtype == np.int16 and back["array"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["npscalar"] == np.float32(2.5) and isinstance(back["npscalar"], np.float32)


def test_unsupported_values_are_refused_with_their_path():
    with pytest.raises(tensorio.TensorIOError, match=r"value\['x'\]\[1\]: values of type .*object"):
        tensorio.dumps({"x": [1, object()]})


@pytest.mark.parametrize("blob", [
    b"not a blob",
    tensorio.MAGIC + (10**9).to_bytes(8, "little"),
    tensorio.dumps(torch.ones(4))[:-3],
])
def test_malformed_blobs_raise_instead_of_doing_anything_else(blob):
    with pytest.raises(tensorio.TensorIOError):
        tensorio.loads(blob)


def test_a_blob_claiming_a_wrong_size_or_an_unknown_dtype_is_refused():
    good = tensorio.dumps(torch.ones(4))
    for old, new in ((b'"shape": [4]', b'"shape": [5]'), (b'"float32"', b'"floatXX"')):
        with pytest.raises(tensorio.TensorIOError):
            tensorio.loads(good.replace(old, new))
