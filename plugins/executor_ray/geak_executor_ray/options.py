"""Options of the ``ray`` executor (the recipe's ``[executor]`` table)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass

RAY_MISSING = ("the ray executor needs the ray package, which is not installed in this Python "
               "(pip install -e plugins/executor_ray, which brings it, or pip install 'ray>=2.10')")
_HOST_PORT = re.compile(r"^\[?[A-Za-z0-9.\-:]+?\]?:\d{1,5}$")


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


@dataclass
class RayExecutorOptions:
    """Where the judges run on a Ray cluster and what each holds. See docs/executors.md."""

    # "auto": the cluster this machine is a node of (`ray start` ran here); "HOST:PORT": the
    # head's address, from a node of that cluster; "ray://HOST:10001": Ray Client, from
    # outside the cluster (needs ray[client]); "local": a private one-machine cluster for this
    # run, stopped at its end.
    address: str = "auto"
    # Judges started on the cluster; 0: one per `gpus_per_judge` GPUs of the cluster, or, on a
    # cluster without GPUs, one per `cpus_per_judge` CPUs.
    judges: int = 0
    # Whole GPUs each judge holds on a cluster with GPUs: its candidates share them as the
    # evaluator allows, and its timing holds a GPU alone. 0: judges take no GPU (interpreter).
    gpus_per_judge: int = 1
    cpus_per_judge: float = 1.0  # CPUs reserved per judge (its children import, compile, compare)
    # A judgement whose judge's worker died is sent to another judge, up to this many tries in
    # all; after that its verdict is a judge error.
    max_attempts: int = 3
    start_timeout_s: float = 300.0  # the most a judge may take to be placed and to start
    connect_timeout_s: float = 10.0  # the most the cluster's head may take to answer
    namespace: str = "geak"  # the Ray namespace of the judges

    def __post_init__(self) -> None:
        problems = []
        if not ray_installed():
            problems.append(RAY_MISSING)
        if self.address not in ("auto", "local") and not self.address.startswith("ray://") \
                and not _HOST_PORT.match(self.address):
            problems.append(f"address {self.address!r} is none of auto, local, HOST:PORT or "
                            f"ray://HOST:PORT")
        if self.judges < 0:
            problems.append("judges must be >= 0 (0: as many as the cluster has room for)")
        if self.gpus_per_judge < 0:
            problems.append("gpus_per_judge must be >= 0")
        if self.cpus_per_judge <= 0:
            problems.append("cpus_per_judge must be > 0")
        if self.max_attempts < 1:
            problems.append("max_attempts must be >= 1")
        if self.start_timeout_s <= 0 or self.connect_timeout_s <= 0:
            problems.append("start_timeout_s and connect_timeout_s must be > 0")
        if problems:
            raise ValueError("; ".join(problems))
