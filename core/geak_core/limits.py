"""Resource limits of a sandboxed child: host memory, processes, open files, file size.

Applied in the child before any job code runs, inherited by everything it starts:

* **host memory**: ``RLIMIT_DATA`` (the heap and private writable mappings). Not
  ``RLIMIT_AS``: the CUDA and ROCm runtimes reserve address space far beyond
  any real use (inaccessible or shared mappings, which ``RLIMIT_DATA`` does not
  count), and a cap on address space breaks them;
* **processes and threads**: ``RLIMIT_NPROC``, which the kernel enforces for a
  user other than root; where the judge runs as root it is ignored, and a
  ``pids`` cgroup (:class:`PidsCgroup`, cgroup v1's ``pids`` hierarchy where
  it is mounted and writable) bounds the child's whole tree instead;
* **open files**: ``RLIMIT_NOFILE``; **file size**: ``RLIMIT_FSIZE`` (a file
  written past it ends the writer with ``SIGXFSZ``); no core dumps.

A limit of 0 leaves that resource as the judge has it.
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import asdict, dataclass
from typing import Any

MIB = 1024 * 1024
PIDS_V1 = "/sys/fs/cgroup/pids"


@dataclass
class ChildLimits:
    memory_mb: int = 0  # RLIMIT_DATA
    processes: int = 0  # RLIMIT_NPROC, and pids.max of the child's cgroup where there is one
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


class PidsCgroup:
    """A ``pids`` cgroup (v1) holding one child's whole process tree, at most ``limit`` tasks.
    Made by the judge, which moves the child in before the child runs anything."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str, limit: int) -> PidsCgroup | None:
        """None where no writable ``pids`` hierarchy exists (nothing else to do then)."""
        if limit <= 0 or not pids_cgroup_available():
            return None
        parent = os.path.join(PIDS_V1, _own_v1_path("pids").lstrip("/"), f"geak-judge-{os.getpid()}")
        path = os.path.join(parent, name)
        try:
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "pids.max"), "w") as handle:
                handle.write(str(limit))
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            return None
        return cls(path)

    def add(self, pid: int) -> bool:
        try:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as handle:
                handle.write(str(pid))
            return True
        except OSError:
            return False

    def hit(self) -> bool:
        """Whether a fork was refused for the limit (``pids.events``)."""
        try:
            with open(os.path.join(self.path, "pids.events")) as handle:
                return any(line.split()[-1] != "0" for line in handle if line.startswith("max"))
        except (OSError, IndexError):
            return False

    def remove(self) -> None:
        """Kill whatever is left in it, then remove it."""
        for _ in range(50):
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as handle:
                    pids = [int(p) for p in handle.read().split()]
            except OSError:
                return
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            import time

            time.sleep(0.02)
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _own_v1_path(controller: str) -> str:
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, names, path = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    return path
    except OSError:
        pass
    return "/"


_PIDS: bool | None = None


def pids_cgroup_available() -> bool:
    """Whether this process can make ``pids`` cgroups (v1 hierarchy mounted and writable)."""
    global _PIDS
    if _PIDS is None:
        base = os.path.join(PIDS_V1, _own_v1_path("pids").lstrip("/"))
        _PIDS = os.path.isfile(os.path.join(base, "pids.max")) or os.path.isfile(
            os.path.join(base, "cgroup.procs"))
        _PIDS = _PIDS and os.access(base, os.W_OK)
    return _PIDS


def describe_process_limit() -> str:
    """How a child's process count is bounded here (``geak-core doctor``)."""
    if pids_cgroup_available():
        return "a pids cgroup per child (cgroup v1)"
    if os.geteuid() != 0:
        return "RLIMIT_NPROC"
    return "not bounded: the judge runs as root (RLIMIT_NPROC does not apply) and no pids cgroup is writable"
