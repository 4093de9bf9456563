"""The ``ray`` executor: judges on the workers of a Ray cluster."""

from __future__ import annotations

from typing import Any

from geak_core.api.components import ComponentSpec, Evaluator, ExecutorBase

from geak_executor_ray.cluster import Connection
from geak_executor_ray.options import RayExecutorOptions


class RayExecutor(ExecutorBase):
    """Connects to the cluster and starts the judges when the run asks for its evaluator."""

    def __init__(self, options: RayExecutorOptions | None = None) -> None:
        self.settings = options or RayExecutorOptions()

    def evaluator(self, spec: ComponentSpec, options: Any) -> Evaluator:
        from geak_executor_ray.judges import RayJudges

        connection = Connection(self.settings)
        connection.open()
        try:
            return RayJudges(connection, spec.name, options, self.settings)
        except BaseException:
            connection.close()
            raise
