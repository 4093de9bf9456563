"""Hook implementations of geak_executor_ray: the ``ray`` executor."""

from __future__ import annotations

from geak_core import hookimpl

from geak_executor_ray.options import RayExecutorOptions


def build_executor(options: RayExecutorOptions | None = None):  # type: ignore[no-untyped-def]
    from geak_executor_ray.executor import RayExecutor

    return RayExecutor(options)


@hookimpl
def geak_register_executors(register):  # type: ignore[no-untyped-def]
    register("ray", build_executor, options=RayExecutorOptions,
             description="judges on a Ray cluster's workers, one per GPU (or per CPU without "
                         "GPUs); a lost worker's jobs go to another judge")
