"""The harness of every KernelBench-X task: the task's own test, in two stages.

Built on the TritonBench harness (same file format: reference code, a line of
146 ``#``, a test part), which executes the test part in a copy of the
namespace of the module under judgement (the PyTorch reference, or the
candidate) with the candidate and the test as one file, as the benchmark runs
them, seeds the generators right before the call (``Task.seeds`` holds the
benchmark's seed, 0; the judge adds its secret seeds) and times the inputs of
the task's performance script (``perf_<i>``, timing-only like the benchmark:
correctness is the test's). What is KernelBench-X's own:

* **Input helpers.** While the test part executes, ``data_utils`` is our
  stand-in (``geak_suite_kernelbenchx.data_utils``), defaulting to the judge's
  device; the test's ``sys.path`` lines find nothing and do no harm.
* **Two stages.** The test returns a dict; the keys naming the ``outlier``
  input mode (``test_random_outlier``, ...) are stage 2, the other keys (fixed
  inputs, ``standard`` random inputs) stage 1. ``make_inputs`` adds the
  one-element input ``outlier_stage`` (1.0); the judge's stage 2 scales it by
  ``Task.outliers.scale`` (``OutlierSpec.inputs`` names it alone), which is
  how ``run`` knows the stage. Both stages run the whole test with the same
  seed, so each draws what the benchmark draws; each compares its own keys.
  A test without outlier-mode inputs has one stage (``Task.outliers`` is None).
* **Quantization tasks** (``QuantizationHarness``): outputs are judged by
  the approximation contract (``precision``), in the judge's trusted compare
  child; before a candidate's first run its source must pass ``quantcheck``
  (the benchmark fails such a candidate before running it, so this is a
  failure to run: ``call_ok`` is false).
"""

from __future__ import annotations

import io
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from geak_core.api.tasks import Case, Task
from geak_suite_tritonbench.harness import TEST_CASE
from geak_suite_tritonbench.harness import Harness as TritonBenchHarness

from geak_suite_kernelbenchx import data_utils, precision, quantcheck
from geak_suite_kernelbenchx.suite import OUTLIER_MODE, STAGE_INPUT

_OPEN = io.open  # bound before any candidate is imported
_MISSING = object()
PERF_PACKAGES = ("kernelbenchx",)


def split_stages(result: Any, stage2: bool) -> Any:
    """The part of a test's result one stage compares: outlier-mode keys in stage 2, the
    others in stage 1 (a result that is not a dict belongs to stage 1 whole)."""
    if not isinstance(result, dict):
        return {} if stage2 else result
    return {k: v for k, v in result.items() if (OUTLIER_MODE in str(k)) == stage2}


@contextmanager
def input_helpers(device: str):
    """``data_utils`` is our stand-in while the block runs; what was there is put back."""
    saved = sys.modules.get(data_utils.MODULE_NAME, _MISSING)
    sys.modules[data_utils.MODULE_NAME] = data_utils.module_for(device)
    try:
        yield
    finally:
        if saved is _MISSING:
            sys.modules.pop(data_utils.MODULE_NAME, None)
        else:
            sys.modules[data_utils.MODULE_NAME] = saved  # type: ignore[assignment]


class Harness(TritonBenchHarness):
    perf_packages = PERF_PACKAGES

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        self.outlier_mode = bool(task.extra.get("outlier_mode"))

    def cases(self, mode: str) -> list[Case]:
        cases = super().cases(mode)
        for case in cases:
            if case.name == TEST_CASE:
                case.outliers = self.outlier_mode
                case.note = (
                    "the task's own test: stage 1 compares its fixed and standard-mode results, "
                    "stage 2 its outlier-mode results" if self.outlier_mode else
                    "the task's own test (it draws no outlier-mode inputs: one stage)"
                ) + (f"; {case.note}" if case.timed else "")
        return cases

    def make_inputs(self, case: Case, seed: int, device: str) -> dict[str, Any]:
        inputs = super().make_inputs(case, seed, device)
        if "perf_index" not in case.params:
            import torch

            inputs[STAGE_INPUT] = torch.ones(1, dtype=torch.float32)
        return inputs

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        super().run(module, case, inputs, outputs)
        marker = inputs.get(STAGE_INPUT)
        if marker is not None:
            stage2 = float(marker.reshape(-1)[0]) != 1.0
            outputs["result"] = split_stages(outputs["result"], stage2)

    def _device_name(self) -> str:
        return "cpu" if self._interpreted() else (self._device or "cuda")

    def _prepare(self, module: Any) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
        with input_helpers(self._device_name()):
            return super()._prepare(module)


class QuantizationHarness(Harness):
    """A quantization task: the approximation contract and the source check."""

    def __init__(self, task: Task) -> None:
        super().__init__(task)
        spec = task.extra.get("quantization") or {}
        self.thresholds = {**precision.DEFAULT_THRESHOLDS, **(spec.get("thresholds") or {})}
        self.check_source = bool(spec.get("check", True))
        self._checked: dict[int, str] = {}

    def _source_problems(self, module: Any) -> str:
        """Why the module's source fails the quantization check ("" when it passes or is the
        reference, which is the float PyTorch code the candidate replaces)."""
        key = id(module)
        if key in self._checked:
            return self._checked[key]
        path = getattr(module, "__file__", None)
        problems = ""
        if isinstance(path, str) and self.task.reference and \
                Path(path).resolve() != Path(self.task.reference).resolve():
            with _OPEN(path, encoding="utf-8") as handle:
                found = quantcheck.check(handle.read())
            problems = "; ".join(found)
        self._checked[key] = problems
        return problems

    def run(self, module: Any, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        if self.check_source:
            problems = self._source_problems(module)
            if problems:
                raise QuantizationContractError(
                    f"quantization check failed ({self.task.id}): {problems}")
        super().run(module, case, inputs, outputs)

    def compare(self, case: Case, name: str, expected: Any, actual: Any) -> str | None:
        return precision.compare(expected, actual, self.thresholds, name)


class QuantizationContractError(Exception):
    """The candidate's source does not quantize in its own kernels."""
