"""Output comparison, done in the judge's process on decoded (CPU) values.

Rules, per output:

* tensors and numpy arrays: same shape and dtype; NaN at the same positions;
  infinities at the same positions with the same sign; finite elements within
  ``|actual - expected| <= atol + rtol * |expected|`` where ``(atol, rtol)``
  is ``tasks.tolerance_for(dtype, overrides)``; integers and booleans exactly;
* Python floats use the override for ``"python_float"``, else ``"*"``, else
  the float32 tolerance; ints, bools, strings, None and bytes exactly;
* dicts compare by key set, then per key; lists and tuples by length, then per
  element (a list and a tuple with equal items are equal).

*noise*: where the reference's own error against the harness's
  high-precision oracle is known (per row: the largest ``|reference - oracle|``
  along the last dimension), an element also passes when
  ``|actual - expected| <= multiple * noise`` of its row. A kernel that differs
  from the reference only in its order of summation stays within a few times
  the reference's own error, even where stage-2 outliers make that error
  exceed a fixed tolerance; a precision downgrade does not (docs/evaluator.md).

Each mismatch is a dict naming the path, what differs, and for tensors the
count, the first few indices with expected and actual values, and the largest
errors, so a reflection prompt can show the model what went wrong.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.tasks import DEFAULT_TOLERANCES, tolerance_for

MAX_LISTED = 5
MAX_MISMATCHES = 10


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def python_float_tolerance(overrides: dict[str, Any]) -> tuple[float, float]:
    if "python_float" in overrides:
        atol, rtol = overrides["python_float"]
        return float(atol), float(rtol)
    if "*" in overrides:
        atol, rtol = overrides["*"]
        return float(atol), float(rtol)
    return DEFAULT_TOLERANCES["float32"]


def _is_tensor(value: Any) -> bool:
    torch = _torch()
    return isinstance(value, torch.Tensor)


def _torch() -> Any:
    import torch

    return torch


def _as_tensor(value: Any) -> Any:
    """numpy arrays become tensors (numeric dtypes torch knows); tensors pass through."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value
    import numpy as np

    if isinstance(value, np.ndarray):
        try:
            return torch.from_numpy(np.ascontiguousarray(value))
        except TypeError:
            return None
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "dict"
    if _is_tensor(value):
        return "tensor"
    import numpy as np

    if isinstance(value, np.ndarray):
        return "tensor"
    if isinstance(value, np.generic):
        return "float" if isinstance(value, np.floating) else "numpy scalar"
    return type(value).__name__


def describe(value: Any) -> str:
    kind = _kind(value)
    if kind == "tensor":
        return f"tensor of shape {tuple(value.shape)} and dtype {_dtype_name(value.dtype)}"
    if kind == "sequence":
        return f"{type(value).__name__} of length {len(value)}"
    if kind == "dict":
        return f"dict with keys {sorted(map(str, value))[:8]}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


NOISE_MULTIPLE = 4.0


def compare_values(
    expected: Any, actual: Any, overrides: dict[str, Any] | None = None, path: str = "output",
    noise: Any = None, multiple: float = NOISE_MULTIPLE,
) -> list[dict[str, Any]]:
    """Mismatches between ``expected`` and ``actual`` (empty list: equal within tolerance).

    ``noise`` mirrors ``expected``'s structure with the reference's per-row error
    against its oracle (or None where unknown); ``multiple`` of it is allowed too.
    """
    out: list[dict[str, Any]] = []
    _compare(expected, actual, overrides or {}, path, out, noise if multiple > 0 else None, multiple)
    return out


def _sub(noise: Any, key: Any) -> Any:
    if isinstance(noise, dict):
        return noise.get(key)
    if isinstance(noise, (list, tuple)) and isinstance(key, int) and key < len(noise):
        return noise[key]
    return None


def _compare(expected: Any, actual: Any, overrides: dict[str, Any], path: str, out: list[dict[str, Any]],
             noise: Any = None, multiple: float = NOISE_MULTIPLE) -> None:
    if len(out) >= MAX_MISMATCHES:
        return
    kind_e, kind_a = _kind(expected), _kind(actual)
    if kind_e in ("float", "int") and kind_a in ("float", "int") and "float" in (kind_e, kind_a):
        kind_e = kind_a = "float"
    if kind_e != kind_a:
        out.append({"path": path, "problem": "type",
                    "message": f"{path}: expected {describe(expected)}, got {describe(actual)}"})
        return
    if kind_e == "tensor":
        _compare_tensors(_as_tensor(expected), _as_tensor(actual), expected, actual, overrides, path, out,
                         noise if _is_tensor(noise) else None, multiple)
    elif kind_e == "sequence":
        if len(expected) != len(actual):
            out.append({"path": path, "problem": "length",
                        "message": f"{path}: expected {len(expected)} items, got {len(actual)}"})
            return
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _compare(e, a, overrides, f"{path}[{i}]", out, _sub(noise, i), multiple)
    elif kind_e == "dict":
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing keys {missing[:8]}")
            if extra:
                parts.append(f"unexpected keys {extra[:8]}")
            out.append({"path": path, "problem": "keys", "message": f"{path}: {', '.join(parts)}"})
            return
        for key in expected:
            _compare(expected[key], actual[key], overrides, f"{path}[{key!r}]", out, _sub(noise, key), multiple)
    elif kind_e == "float":
        e, a = float(expected), float(actual)
        atol, rtol = python_float_tolerance(overrides)
        same_special = (math.isnan(e) and math.isnan(a)) or (math.isinf(e) and e == a)
        if not same_special and not (math.isfinite(e) and math.isfinite(a) and abs(a - e) <= atol + rtol * abs(e)):
            out.append({"path": path, "problem": "value", "expected": e, "actual": a,
                        "message": f"{path}: expected {e!r}, got {a!r} (atol={atol}, rtol={rtol})"})
    else:
        if type(expected) is not type(actual) and kind_e not in ("int",):
            out.append({"path": path, "problem": "type",
                        "message": f"{path}: expected {describe(expected)}, got {describe(actual)}"})
        elif expected != actual:
            out.append({"path": path, "problem": "value", "expected": describe(expected),
                        "actual": describe(actual),
                        "message": f"{path}: expected {describe(expected)}, got {describe(actual)}"})


def _compare_tensors(
    e: Any, a: Any, raw_e: Any, raw_a: Any, overrides: dict[str, Any], path: str,
    out: list[dict[str, Any]], noise: Any = None, multiple: float = NOISE_MULTIPLE,
) -> None:
    torch = _torch()
    if e is None or a is None:
        import numpy as np

        if not (np.array_equal(raw_e, raw_a) and raw_e.dtype == raw_a.dtype):
            out.append({"path": path, "problem": "value", "message": f"{path}: arrays differ"})
        return
    if tuple(e.shape) != tuple(a.shape):
        out.append({"path": path, "problem": "shape",
                    "message": f"{path}: expected shape {tuple(e.shape)}, got {tuple(a.shape)}"})
        return
    if e.dtype != a.dtype:
        out.append({"path": path, "problem": "dtype",
                    "message": f"{path}: expected dtype {_dtype_name(e.dtype)}, got {_dtype_name(a.dtype)}"})
        return
    if e.numel() == 0:
        return
    if e.is_complex():
        _compare_tensors(torch.view_as_real(e), torch.view_as_real(a), None, None, overrides, path, out)
        return
    if _same_bits(e, a):  # the common case for a correct kernel: nothing to measure
        return
    dtype = _dtype_name(e.dtype)
    floating = e.dtype.is_floating_point
    atol, rtol = tolerance_for(dtype, overrides) if floating else (0.0, 0.0)
    rows = None
    if floating and noise is not None and e.dim() > 0 and noise.numel() * e.shape[-1] == e.numel():
        rows = (noise.reshape(-1).to(torch.float64) * multiple, e.shape[-1])
    found = _scan(e.reshape(-1), a.reshape(-1), floating, atol, rtol, rows)
    if found is None:
        return
    count, first_flat, max_abs, max_rel = found
    shape = tuple(e.shape)
    first = [{"index": list(_unravel(i, shape)), "expected": exp, "actual": act}
             for i, exp, act in first_flat]
    record: dict[str, Any] = {
        "path": path,
        "problem": "values",
        "count": count,
        "total": e.numel(),
        "dtype": dtype,
        "atol": atol,
        "rtol": rtol,
        "first": first,
    }
    message = f"{path}: {count} of {e.numel()} elements differ"
    if floating:
        if max_abs is not None:
            record["max_abs_error"] = max_abs
            record["max_rel_error"] = max_rel
        message += f" beyond atol={atol:g}, rtol={rtol:g}"
        if rows is not None:
            message += f" and {multiple:g}x the reference's own error"
        if max_abs is not None:
            message += f" (max abs error {max_abs:.4g})"
    else:
        message += " (exact comparison)"
    f0 = first[0]
    message += f"; first at {tuple(f0['index'])}: expected {f0['expected']}, got {f0['actual']}"
    record["message"] = message
    out.append(record)


# Elements per slice: large outputs are compared piecewise. Each pass over a slice is spread
# over torch's threads; on a 16-core H100 host smaller slices were slower (1 GB of float16
# outputs: 0.96 s with 4 Mi elements, 2.0 s with 256 Ki, 5.1 s with 64 Ki: bench/judge_host.py
# --differ --chunk ...).
CHUNK = 1 << 22


def _same_bits(e: Any, a: Any) -> bool:
    """Bit-identical contents (NaN payloads included): equal whatever the tolerance."""
    torch = _torch()
    e, a = e.contiguous().reshape(-1), a.contiguous().reshape(-1)
    if e.dtype == torch.bool:
        return torch.equal(e, a)
    return torch.equal(e.view(torch.uint8), a.view(torch.uint8))


class _Slices:
    """Reusable buffers for the passes over one slice: the conversions and temporaries of
    the common case (every element within tolerance) allocate nothing per slice. Fresh
    temporaries for every slice cost page faults on every pass: 1 GB of float16 outputs
    within tolerance took 1.87 s to compare on an H100 host, 0.59 s with these buffers
    (``bench/judge_host.py --differ``, both in one call)."""

    def __init__(self, size: int, work: Any) -> None:
        torch = _torch()
        self.e, self.a, self.diff, self.bound = (torch.empty(size, dtype=work) for _ in range(4))
        self.ok = torch.empty(size, dtype=torch.bool)

    def all_close(self, e: Any, a: Any, atol: float, rtol: float) -> bool:
        """Whether every element of the slice passes ``_not_close``'s test (no NaN or
        infinity anywhere on the expected side or in the difference). The slice stays in
        ``self.e`` and ``self.a``, converted to the working dtype, for a closer look."""
        torch = _torch()
        n = e.numel()
        ec, ac = self.e[:n].copy_(e), self.a[:n].copy_(a)
        diff = torch.sub(ac, ec, out=self.diff[:n]).abs_()
        bound = torch.abs(ec, out=self.bound[:n]).mul_(rtol).add_(atol).nan_to_num_(nan=-1.0, posinf=-1.0,
                                                                                     neginf=-1.0)
        return bool(torch.le(diff, bound, out=self.ok[:n]).all())


def _scan(e: Any, a: Any, floating: bool, atol: float, rtol: float,
          rows: tuple[Any, int] | None = None) -> tuple[int, list[tuple[int, Any, Any]], float | None, float | None] | None:
    """One pass over flat ``e``/``a`` in slices: (bad count, first bad, max abs/rel error), or None.

    Floating point: NaN must meet NaN, an infinity the same infinity, and finite
    values satisfy ``|a - e| <= atol + rtol * |e|`` (what ``torch.isclose`` with
    ``equal_nan`` computes, done here in float32, or float64 for float64 data).
    Other dtypes compare exactly. ``rows`` = (allowance per row, row length):
    a finite element within its row's allowance passes too. A slice whose every
    element passes the plain test costs its passes over reused buffers only; the
    others are looked at element by element.
    """
    torch = _torch()
    work = torch.float64 if e.dtype == torch.float64 else torch.float32
    count = 0
    first: list[tuple[int, Any, Any]] = []
    max_abs: float | None = None
    max_rel: float | None = None
    step = CHUNK if rows is None else max(1, CHUNK // rows[1]) * rows[1]  # whole rows per slice
    slices = _Slices(min(step, e.numel()), work) if floating else None
    for start in range(0, e.numel(), step):
        ec, ac = e[start:start + step], a[start:start + step]
        if floating:
            assert slices is not None
            if slices.all_close(ec, ac, atol, rtol):
                continue
            n = ec.numel()
            ec, ac = slices.e[:n], slices.a[:n]  # the slice in the working dtype, as all_close left it
            bad, diff = _not_close(ec, ac, atol, rtol)
            if rows is not None and bool(bad.any()):
                allowance, length = rows
                first_row = start // length
                within = diff.view(-1, length) <= allowance[first_row:first_row + ec.numel() // length,
                                                            None].to(work)
                bad &= ~within.reshape(-1)
        else:
            bad = ec != ac
        n = int(bad.sum())
        if n == 0:
            continue
        count += n
        if len(first) < MAX_LISTED:
            for i in bad.nonzero().reshape(-1)[: MAX_LISTED - len(first)].tolist():
                first.append((start + i, _scalar(ec[i]), _scalar(ac[i])))
        if floating:
            finite = bad & torch.isfinite(ec) & torch.isfinite(ac)  # errors of the failing elements
            if bool(finite.any()):
                d = (ac - ec).abs()[finite]
                rel = d / ec.abs()[finite].clamp_min(1e-30)
                chunk_abs, chunk_rel = float(d.max()), float(rel.max())
                max_abs = chunk_abs if max_abs is None else max(max_abs, chunk_abs)
                max_rel = chunk_rel if max_rel is None else max(max_rel, chunk_rel)
    if count == 0:
        return None
    return count, first, max_abs, max_rel


def _not_close(e: Any, a: Any, atol: float, rtol: float) -> tuple[Any, Any]:
    """``~torch.isclose(a, e, rtol, atol, equal_nan=True)`` in fewer passes, and ``|a - e|``.

    Finite elements: bad unless ``|a - e| <= atol + rtol * |e|``. A non-finite
    expected value gets no tolerance (its bound is made -1), and a NaN
    difference fails the test, so every element with a NaN or infinity on
    either side starts out bad; those few are then passed where ``a == e``
    (the same infinity) or both are NaN, as ``isclose`` with ``equal_nan`` does.
    """
    torch = _torch()
    diff = torch.sub(a, e).abs_()
    bound = torch.abs(e).mul_(rtol).add_(atol).nan_to_num_(nan=-1.0, posinf=-1.0, neginf=-1.0)
    bad = torch.le(diff, bound).logical_not_()
    if bool(bad.any()):
        index = bad.nonzero().reshape(-1)
        ev, av = e[index], a[index]
        same = (ev == av) | (torch.isnan(ev) & torch.isnan(av))
        if bool(same.any()):
            bad[index[same]] = False
    return bad, diff


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    coords = []
    for dim in reversed(shape):
        coords.append(index % dim if dim else 0)
        index //= dim if dim else 1
    return tuple(reversed(coords))


def _scalar(value: Any) -> Any:
    item = value.item()
    if isinstance(item, float) and not math.isfinite(item):
        return str(item)
    return item
