"""Our stand-in for the base class that GEAK-eval's performance scripts import.

A script ``golden_metrics/<name>_perf.py`` imports ``Performance_Metrics`` and
``do_bench_config`` from ``geak_eval.perf.performance_utils`` (older copies:
``performance_utils``) and subclasses the former. The harness registers this
module under those names while it executes a script, so the scripts run
without GEAK-eval. We only use what a script defines: its inputs
(``get_input_tensors``, ``to_cuda``), its call (``call_op``) and its byte and
FLOP formulas (``get_gbps``, ``get_tflops``); timing is the judge's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class do_bench_config:  # noqa: N801 - the name the scripts import
    """Timer settings a script may construct; kept for the scripts' sake, not used."""

    warm_up: int = 25
    repetition: int = 100
    grad_to_none: Any = None
    quantiles: tuple[float, ...] = (0.5, 0.8, 0.2)
    return_mode: str = "median"


def _to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


class Performance_Metrics:  # noqa: N801 - the name the scripts import
    """Base of a script's ``performance_metrics`` class; holds what scripts read from self."""

    def __init__(
        self, op_name: str = "", dtype: Any = None, is_backward: bool = False, **kwargs: Any
    ) -> None:
        self.op_name = op_name
        self.dtype = dtype
        self.is_backward = is_backward
        self.kwargs = kwargs
        self.input_tensors: list[Any] = []
        self.do_bench_config = do_bench_config()

    def get_input_tensors(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not define get_input_tensors()")

    def to_cuda(self, input_tensor: Any) -> Any:
        return _to_device(input_tensor, "cuda")

    def call_op(self, input_tensor: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define call_op()")

    def get_gbps(self, input_tensor: Any, runtime: float) -> float | None:
        return None

    def get_tflops(self, input_tensor: Any, runtime: float) -> float | None:
        return None

    def get_do_bench_config(self, warmup: int | None = None, rep: int | None = None) -> None:
        if warmup is not None:
            self.do_bench_config.warm_up = warmup
        if rep is not None:
            self.do_bench_config.repetition = rep
