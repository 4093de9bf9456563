"""The approximation contract of KernelBench-X's quantization tasks.

A quantized kernel cannot equal the float reference, so these tasks are
judged by three precision metrics of every output tensor against the
reference's, each with a threshold (the benchmark's metadata gives them per
task; default: cosine similarity >= 0.99, relative L1 <= 0.01, RMSE <= 0.01):

* ``cosine_sim``: cosine similarity of the flattened tensors (two all-zero
  tensors: 1; one all-zero tensor: 0);
* ``l1_relative``: ``sum|x - ref| / max(sum|ref|, 1e-12)``;
* ``rmse``: ``sqrt(mean((x - ref)^2))``.

All three are computed in float32. Shapes and dtypes must still match; values
that are not tensors compare as in the default comparison (exactly, floats
within 1e-5).
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_THRESHOLDS: dict[str, float] = {"cosine_sim": 0.99, "l1_relative": 0.01, "rmse": 0.01}
METRICS = tuple(DEFAULT_THRESHOLDS)


def metrics(actual: Any, expected: Any) -> dict[str, float]:
    """The three metrics of ``actual`` against ``expected`` (tensors of one shape)."""
    import torch

    x = actual.detach().to("cpu", torch.float32).reshape(-1)
    ref = expected.detach().to("cpu", torch.float32).reshape(-1)
    x_norm = float(torch.linalg.vector_norm(x))
    ref_norm = float(torch.linalg.vector_norm(ref))
    if x_norm < 1e-12 and ref_norm < 1e-12:
        cosine = 1.0
    elif x_norm < 1e-12 or ref_norm < 1e-12:
        cosine = 0.0
    else:
        cosine = float(torch.nn.functional.cosine_similarity(x.reshape(1, -1), ref.reshape(1, -1)))
    l1 = float((x - ref).abs().sum() / ref.abs().sum().clamp_min(1e-12))
    rmse = float(torch.sqrt(torch.mean((x - ref) ** 2))) if x.numel() else 0.0
    return {"cosine_sim": cosine, "l1_relative": l1, "rmse": rmse}


def failures(found: dict[str, float], thresholds: dict[str, float]) -> list[str]:
    """The metrics of ``found`` outside ``thresholds``, as readable phrases."""
    limits = {**DEFAULT_THRESHOLDS, **thresholds}
    out = []
    if not found["cosine_sim"] >= limits["cosine_sim"]:
        out.append(f"cosine similarity {found['cosine_sim']:.6g} < {limits['cosine_sim']:g}")
    if not found["l1_relative"] <= limits["l1_relative"]:
        out.append(f"relative L1 {found['l1_relative']:.6g} > {limits['l1_relative']:g}")
    if not found["rmse"] <= limits["rmse"]:
        out.append(f"RMSE {found['rmse']:.6g} > {limits['rmse']:g}")
    return out


def compare(expected: Any, actual: Any, thresholds: dict[str, float], path: str = "") -> str:
    """``""`` when ``actual`` meets the contract everywhere, else the first problem found."""
    import torch

    where = path or "the result"
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"{where}: expected {type(expected).__name__}, got {type(actual).__name__}"
        if tuple(expected.shape) != tuple(actual.shape):
            return f"{where}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
        if expected.dtype != actual.dtype:
            return f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
        if expected.numel() == 0:
            return ""
        found = metrics(actual, expected)
        problems = failures(found, thresholds)
        if any(math.isnan(v) for v in found.values()):
            problems = problems or ["a metric is NaN"]
        return f"{where}: {'; '.join(problems)}" if problems else ""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            return f"{where}: keys {sorted(map(str, actual))}, expected {sorted(map(str, expected))}"
        for key in expected:
            found = compare(expected[key], actual[key], thresholds, f"{path}.{key}" if path else str(key))
            if found:
                return found
        return ""
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            return f"{where}: length {len(actual)}, expected {len(expected)}"
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = compare(e, a, thresholds, f"{path}[{index}]")
            if found:
                return found
        return ""
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        if math.isnan(expected) and math.isnan(actual):
            return ""
        if abs(actual - expected) <= 1e-5 + 1e-5 * abs(expected):
            return ""
        return f"{where}: {actual!r}, expected {expected!r}"
    if type(expected) is not type(actual) or expected != actual:
        return f"{where}: {actual!r}, expected {expected!r}"
    return ""
