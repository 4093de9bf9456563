"""Safe serialisation of kernel outputs between processes, without pickle.

The judge moves outputs out of untrusted child processes. ``pickle`` would let
a child run code in the judge on load, so values travel as a JSON header that
describes the structure plus raw byte buffers for tensors and arrays:

* tensors of any dtype (bf16, fp8 and friends included) as raw bytes + dtype
  name + shape; they always decode onto the CPU;
* numpy arrays (numeric dtypes only) as raw bytes + dtype string + shape;
* ``None``, ``bool``, ``int``, ``float`` (NaN and infinities too), ``complex``,
  ``str``, ``bytes``, ``list``, ``tuple``, ``dict`` (any keys of these types),
  ``torch.dtype``, ``torch.Size`` (decoded as a tuple), ``torch.device``
  (decoded as its string).

Decoding validates everything it reads (sizes, dtypes, nesting depth), so a
malicious blob can at worst raise ``TensorIOError``.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from collections.abc import Iterable
from typing import Any

MAGIC = b"GKTIO1\n"
_ALIGN = 64
MAX_DEPTH = 64
MAX_HEADER_BYTES = 64 * 1024 * 1024


class TensorIOError(ValueError):
    """A value that cannot be encoded, or a blob that is not a valid encoding."""


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.buffers: list[memoryview] = []

    def add_buffer(self, data: memoryview) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def node(self, obj: Any, path: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise TensorIOError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"$float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, complex):
            return {"$complex": [self.node(obj.real, path, depth + 1), self.node(obj.imag, path, depth + 1)]}
        if isinstance(obj, (bytes, bytearray)):
            return {"$bytes": self.add_buffer(memoryview(bytes(obj)))}
        torch = sys.modules.get("torch")
        if torch is not None:
            if isinstance(obj, torch.Tensor):
                return self.tensor(obj, path)
            if isinstance(obj, torch.dtype):
                return {"$dtype": str(obj).removeprefix("torch.")}
            if isinstance(obj, torch.Size):
                return {"$tuple": [int(v) for v in obj]}
            if isinstance(obj, torch.device):
                return str(obj)
        np = sys.modules.get("numpy")
        if np is not None:
            if isinstance(obj, np.ndarray):
                return self.ndarray(obj, path, scalar=False)
            if isinstance(obj, np.generic):
                return self.ndarray(np.asarray(obj), path, scalar=True)
        if isinstance(obj, list):
            return [self.node(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"$tuple": [self.node(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            items = [
                [self.node(k, f"{path}.<key>", depth + 1), self.node(v, f"{path}[{k!r}]", depth + 1)]
                for k, v in obj.items()
            ]
            return {"$dict": items}
        raise TensorIOError(
            f"{path}: values of type {type(obj).__module__}.{type(obj).__qualname__} cannot be "
            "sent between processes (supported: tensors, numpy arrays, numbers, str, bytes, "
            "None, list, tuple, dict)"
        )

    def tensor(self, t: Any, path: str) -> dict[str, Any]:
        import torch

        if t.layout != torch.strided:
            raise TensorIOError(f"{path}: only dense (strided) tensors can be sent, not {t.layout}")
        if t.is_quantized:
            raise TensorIOError(f"{path}: quantized tensors cannot be sent")
        device = str(t.device)
        data = t.detach()
        if data.is_conj():
            data = data.resolve_conj()
        if data.is_neg():
            data = data.resolve_neg()
        data = data.to("cpu").contiguous()
        raw = data.reshape(-1).view(torch.uint8) if data.numel() else torch.empty(0, dtype=torch.uint8)
        index = self.add_buffer(memoryview(raw.numpy()).cast("B"))
        return {
            "$tensor": {
                "buf": index,
                "dtype": str(t.dtype).removeprefix("torch."),
                "shape": list(t.shape),
                "device": device,
            }
        }

    def ndarray(self, a: Any, path: str, scalar: bool) -> dict[str, Any]:
        if a.dtype.hasobject or a.dtype.kind not in "biufcmM":
            raise TensorIOError(f"{path}: numpy arrays of dtype {a.dtype} cannot be sent")
        import numpy as np

        data = a if a.flags.c_contiguous else a.copy(order="C")
        index = self.add_buffer(memoryview(data.reshape(-1).view(np.uint8)).cast("B"))
        return {"$ndarray": {"buf": index, "dtype": data.dtype.str, "shape": list(data.shape), "scalar": scalar}}


def dump_chunks(obj: Any) -> list[bytes | memoryview]:
    """Encode ``obj`` as a list of chunks whose concatenation is the blob (no big copies)."""
    encoder = _Encoder()
    root = encoder.node(obj, "value", 0)
    offsets = []
    position = 0
    for buf in encoder.buffers:
        position = -(-position // _ALIGN) * _ALIGN
        offsets.append([position, buf.nbytes])
        position += buf.nbytes
    header = json.dumps({"v": 1, "root": root, "buffers": offsets}, allow_nan=False).encode()
    prefix = MAGIC + struct.pack("<Q", len(header)) + header
    chunks: list[bytes | memoryview] = [prefix]
    written = 0
    for (offset, _), buf in zip(offsets, encoder.buffers, strict=True):
        if offset > written:
            chunks.append(bytes(offset - written))
        chunks.append(buf)
        written = offset + buf.nbytes
    return chunks


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` into one ``bytes`` blob."""
    return b"".join(bytes(c) if isinstance(c, memoryview) else c for c in dump_chunks(obj))


def blob_size(chunks: Iterable[bytes | memoryview]) -> int:
    return sum(len(c) if isinstance(c, bytes) else c.nbytes for c in chunks)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


class _Decoder:
    def __init__(self, body: memoryview, buffers: list[list[int]]) -> None:
        self.body = body
        self.buffers = buffers

    def buffer(self, index: Any) -> tuple[int, int]:
        if not isinstance(index, int) or not 0 <= index < len(self.buffers):
            raise TensorIOError(f"buffer index {index!r} out of range")
        return self.buffers[index][0], self.buffers[index][1]

    def node(self, node: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise TensorIOError(f"nested deeper than {MAX_DEPTH} levels")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.node(v, depth + 1) for v in node]
        if not isinstance(node, dict) or len(node) != 1:
            raise TensorIOError(f"malformed node {str(node)[:80]!r}")
        (tag, value), = node.items()
        if tag == "$tuple":
            return tuple(self.node(v, depth + 1) for v in _expect_list(value, tag))
        if tag == "$dict":
            out = {}
            for item in _expect_list(value, tag):
                if not isinstance(item, list) or len(item) != 2:
                    raise TensorIOError("malformed $dict item")
                key = self.node(item[0], depth + 1)
                try:
                    out[key] = self.node(item[1], depth + 1)
                except TypeError as exc:
                    raise TensorIOError(f"unhashable dict key {key!r}") from exc
            return out
        if tag == "$float":
            if value not in ("nan", "inf", "-inf"):
                raise TensorIOError(f"malformed $float {value!r}")
            return float(value)
        if tag == "$complex":
            re, im = _expect_list(value, tag, 2)
            return complex(self.node(re, depth + 1), self.node(im, depth + 1))
        if tag == "$bytes":
            offset, size = self.buffer(value)
            return bytes(self.body[offset: offset + size])
        if tag == "$dtype":
            return _torch_dtype(value)
        if tag == "$tensor":
            return self.tensor(value)
        if tag == "$ndarray":
            return self.ndarray(value)
        raise TensorIOError(f"unknown tag {tag!r}")

    def tensor(self, spec: Any) -> Any:
        import torch

        if not isinstance(spec, dict):
            raise TensorIOError("malformed $tensor")
        dtype = _torch_dtype(spec.get("dtype"))
        shape = _shape(spec.get("shape"))
        offset, size = self.buffer(spec.get("buf"))
        numel = math.prod(shape)
        if numel * dtype.itemsize != size:
            raise TensorIOError(
                f"tensor buffer holds {size} bytes, shape {shape} of {dtype} needs {numel * dtype.itemsize}"
            )
        if numel == 0:
            return torch.empty(shape, dtype=dtype)
        flat = torch.frombuffer(self.body, dtype=dtype, count=numel, offset=offset)
        return flat.reshape(shape)

    def ndarray(self, spec: Any) -> Any:
        import numpy as np

        if not isinstance(spec, dict):
            raise TensorIOError("malformed $ndarray")
        try:
            dtype = np.dtype(str(spec.get("dtype")))
        except TypeError as exc:
            raise TensorIOError(f"unknown numpy dtype {spec.get('dtype')!r}") from exc
        if dtype.hasobject or dtype.kind not in "biufcmM":
            raise TensorIOError(f"numpy dtype {dtype} not allowed")
        shape = _shape(spec.get("shape"))
        offset, size = self.buffer(spec.get("buf"))
        if math.prod(shape) * dtype.itemsize != size:
            raise TensorIOError("numpy buffer size does not match its shape")
        array = np.frombuffer(self.body, dtype=dtype, count=math.prod(shape), offset=offset)
        array = array.reshape(shape)
        return array[()] if spec.get("scalar") else array


def _expect_list(value: Any, tag: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise TensorIOError(f"malformed {tag}")
    return value


def _shape(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and v >= 0 for v in value):
        raise TensorIOError(f"malformed shape {value!r}")
    return value


def _torch_dtype(name: Any) -> Any:
    import torch

    dtype = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    if not isinstance(dtype, torch.dtype):
        raise TensorIOError(f"unknown torch dtype {name!r}")
    return dtype


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Decode a blob written by ``dumps``; tensors share memory with ``data`` when it is writable."""
    body = memoryview(data).cast("B")
    if body[: len(MAGIC)].tobytes() != MAGIC:
        raise TensorIOError("not a tensorio blob (bad magic)")
    start = len(MAGIC) + 8
    if body.nbytes < start:
        raise TensorIOError("truncated blob")
    (header_len,) = struct.unpack("<Q", body[len(MAGIC): start])
    if header_len > MAX_HEADER_BYTES or start + header_len > body.nbytes:
        raise TensorIOError("truncated or oversized header")
    try:
        header = json.loads(body[start: start + header_len].tobytes())
    except ValueError as exc:
        raise TensorIOError(f"malformed header: {exc}") from exc
    if not isinstance(header, dict) or header.get("v") != 1:
        raise TensorIOError("unsupported tensorio version")
    payload = body[start + header_len:]
    buffers = header.get("buffers")
    if not isinstance(buffers, list):
        raise TensorIOError("malformed buffer table")
    for item in buffers:
        if (
            not isinstance(item, list) or len(item) != 2
            or not all(isinstance(v, int) and v >= 0 for v in item)
            or item[0] + item[1] > payload.nbytes
        ):
            raise TensorIOError("buffer table points outside the blob")
    if data is not None and isinstance(data, bytes):
        # torch.frombuffer warns on read-only memory; copy once into a writable buffer.
        payload = memoryview(bytearray(payload))
    return _Decoder(payload, buffers).node(header.get("root"), 0)
