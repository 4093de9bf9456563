"""Resource limits of a sandboxed child: host memory, processes, open files, file size.

Applied in the child before any job code runs, inherited by everything it starts:

* **host memory**: ``RLIMIT_DATA`` (the heap and private writable mappings). Not
  ``RLIMIT_AS``: the CUDA and ROCm runtimes reserve address space far beyond
  any real use (inaccessible or shared mappings, which ``RLIMIT_DATA`` does not
  count), and a cap on address space breaks them;
* **processes and threads**: in the child's own PID namespace, that namespace's
  ``pid_max`` (``geak_core.kit.sandbox.limit_process_ids``), which holds for root
  too; ``RLIMIT_NPROC`` besides, which the kernel enforces for users other than
  root;
* **open files**: ``RLIMIT_NOFILE``; **file size**: ``RLIMIT_FSIZE`` (a file
  written past it ends the writer with ``SIGXFSZ``); no core dumps.

A limit of 0 leaves that resource as the judge has it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

MIB = 1024 * 1024


@dataclass
class ChildLimits:
    memory_mb: int = 0  # RLIMIT_DATA
    processes: int = 0  # the PID namespace's pid_max, and RLIMIT_NPROC
    open_files: int = 0  # RLIMIT_NOFILE
    file_mb: int = 0  # RLIMIT_FSIZE

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ChildLimits:
        return cls(**{k: int(v) for k, v in (data or {}).items()})

    def describe(self) -> str:
        parts = []
        if self.memory_mb:
            parts.append(f"{self.memory_mb} MiB of host memory")
        if self.processes:
            parts.append(f"{self.processes} processes and threads")
        if self.open_files:
            parts.append(f"{self.open_files} open files")
        if self.file_mb:
            parts.append(f"files of {self.file_mb} MiB")
        return ", ".join(parts) or "none"


def physical_memory_mb() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MIB)
    except (ValueError, OSError, AttributeError):
        return 0


def _lower(resource: Any, which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def apply_rlimits(limits: ChildLimits) -> None:
    """Lower this process's limits (its children inherit them); never raises them."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.memory_mb:
        _lower(resource, resource.RLIMIT_DATA, limits.memory_mb * MIB)
    if limits.processes and hasattr(resource, "RLIMIT_NPROC"):
        _lower(resource, resource.RLIMIT_NPROC, limits.processes)
    if limits.open_files:
        _lower(resource, resource.RLIMIT_NOFILE, limits.open_files)
    if limits.file_mb:
        _lower(resource, resource.RLIMIT_FSIZE, limits.file_mb * MIB)


def explain_failure(text: str, limits: ChildLimits) -> str:
    """A sentence naming the limit behind a failure message, or "" (none recognised)."""
    lowered = text.lower()
    if limits.memory_mb and ("memoryerror" in lowered or "can't allocate memory" in lowered
                             or "cannot allocate memory" in lowered or "out of memory" in lowered
                             and "cuda" not in lowered):
        return (f"the child's host memory is limited to {limits.memory_mb} MiB "
                "(evaluator option child_memory_mb)")
    if limits.processes and ("resource temporarily unavailable" in lowered or "can't start new thread" in lowered
                             or "blockingioerror" in lowered and "fork" in lowered):
        return (f"the child may run {limits.processes} processes and threads "
                "(evaluator option child_processes)")
    if limits.open_files and "too many open files" in lowered:
        return f"the child may open {limits.open_files} files (evaluator option child_open_files)"
    if limits.file_mb and ("file too large" in lowered or "sigxfsz" in lowered):
        return f"the child's files are limited to {limits.file_mb} MiB (evaluator option child_file_mb)"
    return ""


def describe_process_limit(isolated: bool) -> str:
    """How a child's process count is bounded here (``geak-core doctor``)."""
    if isolated:
        return "the PID namespace's pid_max (Linux 6.14 and later; RLIMIT_NPROC besides)"
    if os.geteuid() != 0:
        return "RLIMIT_NPROC"
    return "not bounded: the judge runs as root (RLIMIT_NPROC does not apply to root) without namespaces"
