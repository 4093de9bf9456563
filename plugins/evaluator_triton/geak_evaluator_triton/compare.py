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

Each mismatch is a dict naming the path, what differs, and for tensors the
count, the first few indices with expected and actual values, and the largest
errors, so a reflection prompt can show the model what went wrong.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.tasks import DEFAULT_TOLERANCES, tolerance_for

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


def compare_values(
    expected: Any, actual: Any, overrides: dict[str, Any] | None = None, path: str = "output"
) -> list[dict[str, Any]]:
    """Mismatches between ``expected`` and ``actual`` (empty list: equal within tolerance)."""
    out: list[dict[str, Any]] = []
    _compare(expected, actual, overrides or {}, path, out)
    return out


def _compare(expected: Any, actual: Any, overrides: dict[str, Any], path: str, out: list[dict[str, Any]]) -> None:
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
        _compare_tensors(_as_tensor(expected), _as_tensor(actual), expected, actual, overrides, path, out)
    elif kind_e == "sequence":
        if len(expected) != len(actual):
            out.append({"path": path, "problem": "length",
                        "message": f"{path}: expected {len(expected)} items, got {len(actual)}"})
            return
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _compare(e, a, overrides, f"{path}[{i}]", out)
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
            _compare(expected[key], actual[key], overrides, f"{path}[{key!r}]", out)
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
    out: list[dict[str, Any]],
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
    dtype = _dtype_name(e.dtype)
    if e.is_complex():
        _compare_tensors(torch.view_as_real(e), torch.view_as_real(a), None, None, overrides, path, out)
        return
    if not e.dtype.is_floating_point:
        bad = e != a
        atol = rtol = 0.0
        ef, af = e, a
    else:
        atol, rtol = tolerance_for(dtype, overrides)
        work = torch.float64 if e.dtype == torch.float64 else torch.float32
        ef, af = e.to(work), a.to(work)
        nan_e, nan_a = torch.isnan(ef), torch.isnan(af)
        inf_e, inf_a = torch.isinf(ef), torch.isinf(af)
        finite = ~(nan_e | nan_a | inf_e | inf_a)
        diff = (af - ef).abs()
        tol = atol + rtol * ef.abs()
        bad = (nan_e != nan_a) | (inf_e != inf_a) | (inf_e & inf_a & (ef != af))
        bad |= finite & (diff > tol)
    count = int(bad.sum())
    if count == 0:
        return
    flat = bad.reshape(-1).nonzero().reshape(-1)[:MAX_LISTED]
    shape = tuple(e.shape)
    first = []
    for index in flat.tolist():
        coords = _unravel(index, shape)
        first.append({
            "index": list(coords),
            "expected": _scalar(ef.reshape(-1)[index]),
            "actual": _scalar(af.reshape(-1)[index]),
        })
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
    if e.dtype.is_floating_point:
        finite_both = torch.isfinite(ef) & torch.isfinite(af)
        if bool(finite_both.any()):
            d = (af - ef).abs()[finite_both]
            rel = d / ef.abs()[finite_both].clamp_min(1e-30)
            record["max_abs_error"] = float(d.max())
            record["max_rel_error"] = float(rel.max())
        message += f" beyond atol={atol:g}, rtol={rtol:g}"
        if "max_abs_error" in record:
            message += f" (max abs error {record['max_abs_error']:.4g})"
    else:
        message += " (exact comparison)"
    f0 = first[0]
    message += f"; first at {tuple(f0['index'])}: expected {f0['expected']}, got {f0['actual']}"
    record["message"] = message
    out.append(record)


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
