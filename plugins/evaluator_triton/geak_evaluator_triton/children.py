"""Starting the judge's children: sandbox settings, Triton caches, what a child is told."""

from __future__ import annotations

import os
import sys
from typing import Any

from geak_core.sandbox import SandboxResult, run_sandboxed
from geak_core.tasks import Task

from geak_evaluator_triton.devices import Runtime, Slot
from geak_evaluator_triton.options import TritonEvaluatorOptions

CHILD = "geak_evaluator_triton.child"


class Children:
    """Runs ``child`` jobs for one evaluator: same options, same runtime, same caches."""

    def __init__(self, options: TritonEvaluatorOptions) -> None:
        self.options = options
        self.runtime: Runtime | None = None

    def cache_dir(self, role: str) -> str:
        root = self.options.triton_cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "geak", "triton")
        path = os.path.join(root, role)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def sys_path(self) -> list[str]:
        extra = [os.path.abspath(p) for p in self.options.extra_pythonpath]
        return extra + [p for p in sys.path if p not in extra]

    def run(self, job: str, args: Any, env: dict[str, str | None], *, timeout: float, cache: str,
            on_message: Any = None) -> SandboxResult:
        """Run ``child.<job>`` (or a full ``module:function``) in a fresh sandboxed child."""
        entry = job if ":" in job else f"{CHILD}:{job}"
        child_env = dict(env)
        child_env["TRITON_CACHE_DIR"] = self.cache_dir(cache)
        return run_sandboxed(
            entry,
            args,
            timeout_s=timeout,
            env=child_env,
            sys_path=self.sys_path(),
            output_limit=self.options.output_limit_kb * 1024,
            result_limit=self.options.max_result_mb * 1024 * 1024,
            on_message=on_message,
            isolate=self.runtime.isolate if self.runtime is not None else False,
        )

    def for_task(self, task: Task, slot: Slot) -> Any:
        """``run_child(job, args)`` for trusted jobs of ``task`` (the harness compare hook)."""

        def run_child(job: str, args: dict[str, Any]) -> SandboxResult:
            return self.run(job, {"task": task_payload(task), **args}, slot.env,
                            timeout=self.options.reference_timeout_s, cache="reference")

        return run_child


def task_payload(task: Task) -> dict[str, Any]:
    """The task as a child receives it, with file paths made absolute."""
    data = task.to_dict()
    for key in ("reference", "timing_baseline"):
        path = data.get(key)
        if path and not os.path.isabs(path) and os.path.exists(path):
            data[key] = os.path.abspath(path)
    return data
