"""One judge on a Ray worker: the recipe's evaluator, built there, judging what it is sent.

This class is the body of a Ray actor (``ray.remote`` is applied by the driver,
so importing this module needs no Ray). The worker process builds the evaluator
from its own plugin registry, exactly as a local run builds it, and the
evaluator starts its sandboxed children on the worker's machine as it would on
the driver's: candidate code arrives as text and runs only in those children.
Reference outputs and the judge's secret seeds stay in this process; the driver
gets verdicts (``EvalResult.to_dict()``) and nothing else.

Before building the evaluator the worker drops credentials from its own
environment (the names ``geak_core.kit.sandbox.scrub_env`` drops, Ray's own ``RAY_*``
settings kept): a cluster started from a shell that holds API keys passes them
to every worker, and no judge needs them. A judge that holds no GPU hides the
node's GPUs from itself, so its evaluator works under the interpreter.
"""

from __future__ import annotations

import asyncio
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def drop_credentials(environ: Any = os.environ) -> list[str]:
    """Remove from ``environ`` what the sandbox keeps from children (keys, tokens, ...),
    except Ray's own settings; returns the names removed."""
    from geak_core.kit import sandbox

    return sandbox.drop_credentials(environ, keep=("RAY_",))


class JudgeWorker:
    """A Ray actor holding one evaluator; ``evaluate`` runs on a pool of the evaluator's
    ``max_parallel`` threads, so one judge works on that many candidates at once."""

    def __init__(self, evaluator: str, options: Any, load_plugins: str | None, hardware: Any,
                 holds_gpu: bool) -> None:
        drop_credentials()
        if not holds_gpu:
            for name in GPU_VARIABLES:
                os.environ[name] = ""
        from geak_core.engine.plugins import LOAD_ENV, PluginManager

        if load_plugins is not None:
            os.environ[LOAD_ENV] = load_plugins
        self.judge = PluginManager().build("evaluator", evaluator, options)
        if hardware is not None:
            self.judge.set_hardware(hardware)
        self.capacity = max(1, int(self.judge.max_parallel))
        self.pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="geak-judge")
        self.in_flight = 0
        self.judged = 0

    def _gpus(self) -> list[str]:
        import ray

        return [str(g) for g in ray.get_gpu_ids()]

    async def describe(self) -> dict[str, Any]:
        """Where this judge runs and how many candidates it takes at once."""
        import ray

        return {"pid": os.getpid(), "host": socket.gethostname(),
                "node": ray.get_runtime_context().get_node_id(), "gpus": self._gpus(),
                "visible": {name: os.environ[name] for name in GPU_VARIABLES if name in os.environ},
                "capacity": self.capacity}

    async def status(self) -> dict[str, int]:
        return {"pid": os.getpid(), "in_flight": self.in_flight, "judged": self.judged}

    async def evaluate(self, task: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
        from geak_core.api.model import Candidate
        from geak_core.api.tasks import Task

        self.in_flight += 1
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                self.pool, self.judge.evaluate, Task.from_dict(task), Candidate.from_dict(candidate))
        finally:
            self.in_flight -= 1
        self.judged += 1
        return result.to_dict()

    async def unmet_requirements(self, task: dict[str, Any]) -> list[str]:
        from geak_core.api.tasks import Task

        # not on the judging pool: a busy judge still answers at once
        return list(await asyncio.get_running_loop().run_in_executor(
            None, self.judge.unmet_requirements, Task.from_dict(task)))

    async def set_hardware(self, hardware: Any) -> None:
        self.judge.set_hardware(hardware)

    async def close(self) -> None:
        self.judge.close()
        self.pool.shutdown(wait=False)
