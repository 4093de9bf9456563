"""Where children run: devices, the worker slots pinned to them, and each device's gate.

Several candidates may be checked on one GPU at once (``candidates_per_gpu``
slots share a device), but timing must have the device to itself. Each device
has a :class:`DeviceGate`, a writer-preferring readers-writer lock: every
correctness run and every reference computation holds it shared, a timing
phase holds it exclusively, so nothing else runs on the GPU while a candidate
is timed and a waiting timing phase is not starved by a stream of runs.

Processes do not run kernels side by side on one GPU: without MPS the driver
time-slices their contexts, and eight children whose runs each synchronise
several times wait for each other's slices (on an H100, runs of 0.2 s took
4-5 s each with eight children at once). So at most ``runs_per_gpu``
candidate runs hold the gate at once (``capped`` holders); the other children
import, compile and are compared meanwhile, which is CPU work.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

LOCK_FILE_WAIT_S = 2.0
LONG_HOLD_S = 5.0  # a shared hold this long no longer keeps other runs out while timing waits


class DeviceGate:
    """Shared holders (correctness runs) or one exclusive holder (timing).

    ``max_capped``: how many *capped* shared holders (candidate runs) may hold
    it at once (0: no limit); uncapped shared holders (reference children) only
    wait for timing.

    Timing waiting for the device keeps new shared holders out (else a steady
    stream of runs would keep it waiting for ever), but not while a run that
    held the device before timing began to wait has held it for ``long_hold_s``
    or more: timing waits for that run anyway (a candidate's slow host loop, a
    compile that Triton's hooks do not see), and the other slots' runs go on
    meanwhile instead of the whole device standing idle. Runs let in so do not
    keep the way open: once the earlier runs are done, timing waits only for
    them. On an H200 one such run stopped every verdict of a TritonBench file
    for minutes, the GPU at 0 %.
    """

    def __init__(self, max_capped: int = 0, lock_file: str | None = None) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._capped = 0
        self.max_capped = max_capped
        self._exclusive = False
        self.long_hold_s = LONG_HOLD_S
        self._since: dict[Any, list[float]] = {}  # holder -> when each of its holds began
        self._writer_since: list[float] = []  # when each waiting timing phase began to wait
        # Children that are not part of any judgement yet (spares creating their CUDA
        # context) hold this file shared for that moment; timing takes it exclusively.
        self.lock_file = lock_file
        self._lock_fd: int | None = None
        self.spare_wait_s = 0.0  # of the last exclusive hold's wait, the part spent on spares

    def acquire_shared(self, capped: bool = False, holder: Any = None) -> float:
        """Block while timing holds the device, while it waits for it (unless a current holder
        has held it for ``long_hold_s``), and, for a capped holder, while ``max_capped``
        capped holders hold it; returns seconds waited. ``holder``: who releases it (the
        same object to ``release_shared``)."""
        started = time.monotonic()
        with self._cond:
            while True:
                if self._exclusive or (capped and self.max_capped and self._capped >= self.max_capped):
                    self._cond.wait()
                    continue
                if self._writer_since:  # a timing phase waits
                    held = self._held_before_timing()
                    if held < self.long_hold_s:
                        # Timing waits for runs that have not held the device long: keep out.
                        self._cond.wait(None if held < 0 else self.long_hold_s - held + 0.001)
                        continue
                break
            self._shared += 1
            self._capped += capped
            self._since.setdefault(holder, []).append(time.monotonic())
        return time.monotonic() - started

    def release_shared(self, capped: bool = False, holder: Any = None) -> None:
        with self._cond:
            self._shared = max(0, self._shared - 1)
            if capped:
                self._capped = max(0, self._capped - 1)
            starts = self._since.get(holder)
            if starts:
                starts.pop()  # a holder's latest hold ends first
                if not starts:
                    del self._since[holder]
            self._cond.notify_all()

    def _held_before_timing(self) -> float:
        """Seconds the longest current shared hold that began before the first waiting
        timing phase has lasted (-1: none)."""
        waiting_since = min(self._writer_since, default=math.inf)
        starts = [since for holds in self._since.values() for since in holds if since < waiting_since]
        return time.monotonic() - min(starts) if starts else -1.0

    def acquire_exclusive(self) -> float:
        started = time.monotonic()
        with self._cond:
            self._writer_since.append(started)
            try:
                while self._exclusive or self._shared:
                    self._cond.wait()
            finally:
                self._writer_since.remove(started)
            self._exclusive = True
        self.spare_wait_s = self._take_file()
        return time.monotonic() - started

    def release_exclusive(self) -> None:
        self._drop_file()
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()

    def _take_file(self, wait_s: float = LOCK_FILE_WAIT_S) -> float:
        """Wait (at most ``wait_s``: a stuck holder must not stall the judge) until no spare
        is creating its CUDA context on this device, and keep others from starting; returns
        the seconds waited."""
        if not self.lock_file:
            return 0.0
        try:
            fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return 0.0
        began = time.monotonic()
        deadline = began + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break  # time anyway; the spare's start is the lesser harm
                time.sleep(0.01)
        self._lock_fd = fd
        return time.monotonic() - began

    def _drop_file(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # releases the lock with it

    @contextmanager
    def shared(self) -> Iterator[None]:
        holder = object()
        self.acquire_shared(holder=holder)
        try:
            yield
        finally:
            self.release_shared(holder=holder)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        self.acquire_exclusive()
        try:
            yield
        finally:
            self.release_exclusive()


@dataclass
class Slot:
    index: int
    env: dict[str, str | None]
    label: str
    gate: DeviceGate = field(default_factory=DeviceGate)  # shared by the slots of one device


@dataclass
class Runtime:
    mode: str  # "interpreter" | "gpu"
    case_set: str  # "small" | "full"
    device_name: str
    vendor: str | None
    slots: list[Slot]
    probe: dict[str, Any] = field(default_factory=dict)
    isolate: bool = False  # children in their own namespaces

    def shares_device(self, slot: Slot) -> bool:
        """Other slots share ``slot``'s device gate (several candidates on one GPU)."""
        return sum(1 for s in self.slots if s.gate is slot.gate) > 1


def gpu_slots(vendor: str, visible: list[str], per_device: int, runs_per_gpu: int = 0,
              cpus: int | None = None) -> list[Slot]:
    """``per_device`` slots for each visible device, the slots of a device sharing its gate.

    Each child gets an equal share of the CPUs for its host-side thread pools
    (torch's intra-op threads, OpenMP): eight children with a pool of every
    core each would fight over the cores while they generate inputs and copy
    outputs.
    """
    slots: list[Slot] = []
    threads = str(max(1, (cpus or os.cpu_count() or 1) // max(1, per_device * len(visible))))
    for device in visible:
        # One hardware queue per process: work a timed call leaves on another stream has fewer
        # ways to overlap later calls' busy-wait and flush (timed_calls).
        env: dict[str, str | None] = {"TRITON_INTERPRET": None, "OMP_NUM_THREADS": threads,
                                      "MKL_NUM_THREADS": threads, "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
        if vendor == "amd":
            env.update({"HIP_VISIBLE_DEVICES": device, "CUDA_VISIBLE_DEVICES": None})
        else:
            env.update({"CUDA_VISIBLE_DEVICES": device})
        gate = DeviceGate(runs_per_gpu, lock_file=device_lock_file(vendor, device))
        for k in range(per_device):
            label = f"GPU {device}" + (f" (slot {k + 1} of {per_device})" if per_device > 1 else "")
            slots.append(Slot(len(slots), dict(env), label, gate))
    # Interleave devices so that a partly used pool spreads its work over all GPUs.
    return sorted(slots, key=lambda s: (s.index % per_device, s.index // per_device))


def device_lock_file(vendor: str, device: str) -> str:
    """The file a device's timing holds exclusively (see :class:`DeviceGate`)."""
    root = os.path.join(tempfile.gettempdir(), f"geak-judge-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    path = os.path.join(root, f"{os.getpid()}-{vendor}-{device}.lock")
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    return path


def gpu_visible() -> bool:
    from geak_core.engine.hardware import no_gpu_here

    from geak_evaluator_triton.child_jobs import is_interpreter

    if is_interpreter() or no_gpu_here():
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def visible_devices(vendor: str, count: int) -> list[str]:
    names = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if vendor == "amd" else ("CUDA_VISIBLE_DEVICES",)
    for name in names:
        value = os.environ.get(name)
        if value:
            listed = [v.strip() for v in value.split(",") if v.strip()]
            if listed:
                return listed[:count]
    return [str(i) for i in range(count)]
