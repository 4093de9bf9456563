"""Comparing what a candidate produced with what the reference produced (judge side).

Values are compared by ``value_compare.compare_values`` under the task's and the
case's tolerances. Harnesses that override ``compare`` have their hook run in
a trusted child (harness only, never candidate code) through
:func:`custom_compare`.
"""

from __future__ import annotations

import math
from typing import Any

from geak_core.api.tasks import Case, Task

from geak_evaluator_triton.protocol import where
from geak_evaluator_triton.reference_run import ReferenceRun
from geak_evaluator_triton.value_compare import NOISE_MULTIPLE, compare_values


class JudgeError(Exception):
    """The judge could not judge (bad setup, failing reference): not the candidate's fault."""


class ReferenceFailed(JudgeError):
    """The task's reference failed, or did not finish in its budget: whatever the candidate,
    its task cannot be judged here (verdict flags ``judge_error`` and ``reference_failed``).
    ``seed``: the seed it failed on, when known; ``timed_out_s``: the budget it was killed at."""

    def __init__(self, message: str, seed: int | None = None, timed_out_s: float = 0.0) -> None:
        super().__init__(message)
        self.seed = seed
        self.timed_out_s = timed_out_s


def overrides_for(task: Task, case: Case) -> dict[str, Any]:
    return {**task.tolerances, **case.tolerances}


def compare_frame(task: Task, ref: ReferenceRun, cases: dict[str, Case], frame: dict[str, Any],
                  custom: dict[str, Any] | None, multiple: float = NOISE_MULTIPLE) -> dict[str, Any]:
    """Findings of one run: determinism (run vs rerun) and outputs vs the reference."""
    case = cases[frame["case"]]
    overrides = overrides_for(task, case)
    found: dict[str, Any] = {}
    if "rerun" in frame:
        found["rerun_diffs"] = compare_values(frame["outputs"], frame["rerun"], overrides, "output")
        found["rerun_bitwise"] = bitwise_equal(frame["outputs"], frame["rerun"])
    index = (frame["stage"], frame["case"], frame["seed"])
    expected = ref.outputs.get(index)
    if expected is None:
        raise JudgeError(f"no reference output for {where(frame)}")
    found["mismatches"] = compare_outputs(expected, frame["outputs"], overrides, custom, ref.noise.get(index),
                                          multiple)
    return found


def compare_outputs(expected: Any, actual: Any, overrides: dict[str, Any], custom: dict[str, Any] | None,
                    noise: Any = None, multiple: float = NOISE_MULTIPLE) -> list[dict[str, Any]]:
    """Mismatches of ``actual`` against ``expected``; ``custom`` holds the harness hook's verdicts."""
    if isinstance(expected, dict) and isinstance(actual, dict) and custom:
        out = []
        missing = [k for k in expected if k not in actual]
        if missing:
            return compare_values(expected, actual, overrides, "outputs")
        for name, value in expected.items():
            verdict = custom.get(name)
            if verdict is None:
                out += compare_values(value, actual[name], overrides, name, _part(noise, name), multiple)
            elif verdict:
                out.append({"path": name, "problem": "custom", "message": f"{name}: {verdict}"})
        return out
    if isinstance(expected, dict) and isinstance(actual, dict) and set(expected) == set(actual):
        out = []
        for name in expected:
            out += compare_values(expected[name], actual[name], overrides, name, _part(noise, name), multiple)
        return out
    return compare_values(expected, actual, overrides, "outputs", noise, multiple)


def _part(noise: Any, name: str) -> Any:
    return noise.get(name) if isinstance(noise, dict) else None


def custom_compare(task: Task, ref: ReferenceRun, runs: list[dict[str, Any]], cases: dict[str, Case],
                   run_child: Any) -> dict[int, dict[str, Any]]:
    """Run the harness's own compare hook in a trusted child; verdicts per run index and output."""
    items, owners = [], []
    for index, frame in enumerate(runs):
        expected = ref.outputs.get((frame["stage"], frame["case"], frame["seed"]))
        actual = frame["outputs"]
        if not isinstance(expected, dict) or not isinstance(actual, dict):
            continue
        for name, value in expected.items():
            if name in actual:
                items.append({"case": cases[frame["case"]].to_dict(), "name": name,
                              "expected": value, "actual": actual[name]})
                owners.append((index, name))
    if not items:
        return {}
    result = run_child("compare", {"items": items})
    verdicts = result.returned
    if not result.completed or not isinstance(verdicts, list) or len(verdicts) != len(items):
        raise JudgeError(f"the harness compare hook of {task.key} failed: {result.describe_exit()}"
                         + tail(result.stderr))
    out: dict[int, dict[str, Any]] = {}
    for (index, name), verdict in zip(owners, verdicts, strict=True):
        out.setdefault(index, {})[name] = verdict
    return out


def bitwise_equal(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.numel() == 0:
            return True
        return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(bitwise_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bitwise_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def tail(text: str, limit: int = 2000) -> str:
    text = (text or "").strip()
    if not text:
        return ""
    return "\n" + (text if len(text) <= limit else "[...]" + text[-limit:])
