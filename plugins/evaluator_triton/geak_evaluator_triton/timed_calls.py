"""Timed calls, in a child: one side's kernels called, held, flushed and timed, block by block.

A *side* is what one process times: the baseline (in the judge's trusted timer
child), a candidate (in its own child) or PyTorch eager (in the eager child).
Every timed call of every side goes the same way, so that no call the judge
checks looks different from the others:

1. fresh poisoned outputs (``harness.allocate``);
2. on the device: a busy-wait (sized so the host has queued the kernel before
   it ends: :func:`hold_for`), a cache flush, the start event, the call
   (``harness.run``), the end event;
3. queued right behind it, the checks of its outputs (below); for a candidate, first
   (on the host, before anything reads them) that they are still the buffers step 1
   allocated and that what the call returned is plain (``checks.output_objects``).

Calls are queued back to back in blocks and the device is synchronised once
per block, Python's garbage collector paused meanwhile (:func:`collector_paused`).
Work a call leaves on another stream without joining it back to the current one
is not in what the checks queued behind it see (its outputs are not ready in
stream order: rejected), and whatever outlasts the block's last event widens the
block's host clock against its device span, the *gap* (``checks.side_work``).
The judge's children run with
``CUDA_DEVICE_MAX_CONNECTIONS=1`` (one hardware queue), which leaves such work
fewer ways to overlap the busy-wait and the flush of later calls.

Once a call has returned, and before the next is queued, trusted code of the
child draws with the operating system's random numbers positions of every
output tensor and queues gathers of them, and decides (``secrets``) whether
to queue a copy of the whole outputs for the judge (``checks.timed_outputs``):
they run on the device right after the call, before anything a later call
queues, so a side that skips work on some calls, or does it later, cannot
know which calls are looked at, nor mend them afterwards.

Whole copies are large (a flash-attention case's outputs are 100 MB), and the
pipe to the judge moves about 1 GB/s: a candidate side keeps them on the host
(up to ``defer_bytes`` in all) and sends them once the judge has ended the
session and given the device back (``take_kept``), so that other verdicts'
timings do not wait for the transfer. The block's frame says how many it kept,
and the judge rejects a timing whose kept outputs do not all arrive.
"""

from __future__ import annotations

import gc
import math
import os
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from geak_evaluator_triton.checks.launches import own_launches
from geak_evaluator_triton.checks.output_objects import record as record_outputs
from geak_evaluator_triton.checks.output_objects import settle as settle_outputs

LATER_WARMUP_SHARE = 0.25  # of warmup_ms, for every case after the phase's first
MIN_WARMUP_CALLS = 3  # per side and case, after the first call
HOLD_MARGIN = 1.5  # the busy-wait over one call's host time (see hold_for)
MAX_HOLD_US = 5000.0
SAMPLES_PER_TENSOR = 64  # output elements gathered at random positions after every timed call
MAX_BLOCK_CALLS = 64  # calls in one block at most (the pinned room for positions is reused after it)
DEFER_BYTES = 1 << 30  # whole copies a candidate side keeps for after the session, at most, in all


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a timed stretch (as ``timeit`` does), and on
    again after it if it was: a collection that falls inside a block stalls the host for as
    long as it runs (a full one, 75 ms on the development machine with torch, Triton and
    the judge's modules loaded), which makes the calls after it late, or, before the
    block's first event or after its last, widens the block's host clock against its
    device span (``checks.side_work``). Both sides' children pause it alike; what a block
    leaves for the collector is collected after it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def warmup_for(warmup_ms: float, index: int) -> float:
    """The warm-up per side of the phase's ``index``-th case: ``warmup_ms`` for the first,
    when the device may come from idle clocks; LATER_WARMUP_SHARE of it for the others,
    which follow timed calls with the device held all along (their first call still
    compiles and autotunes, and at least MIN_WARMUP_CALLS more follow it)."""
    return warmup_ms if index == 0 else warmup_ms * LATER_WARMUP_SHARE


def hold_for(launch_us: float, queue_ahead_us: float) -> float:
    """The busy-wait queued before each timed call, in microseconds (0: none).

    It has to outlast the host's path from queuing it to queuing the kernel, so
    that the start event executes only after the launch is queued: a kernel
    shorter than its own launch path is then timed without the launch overhead,
    the same for both sides. That path is about one call's host time
    (``launch_us``, the larger side's upper quartile in the warm-up); the busy-wait is
    HOLD_MARGIN times that, and at least ``queue_ahead_us``; the cache flush,
    queued after it, adds its own time to the margin. ``queue_ahead_us`` = 0
    turns it off. Every microsecond of it is device time spent per timed call,
    so it is no longer than it needs to be.
    """
    if queue_ahead_us <= 0:
        return 0.0
    return min(MAX_HOLD_US, max(queue_ahead_us, HOLD_MARGIN * launch_us))


def cycles_per_us() -> float:
    """GPU clock cycles of ``torch.cuda._sleep`` per microsecond, measured with CUDA events
    (0.0 where the busy-wait kernel is missing)."""
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return 0.0
    probe = 1_000_000
    sleep(probe // 10)  # first call loads the kernel
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(probe)
    end.record()
    torch.cuda.synchronize()
    elapsed_us = start.elapsed_time(end) * 1e3
    return probe / elapsed_us if elapsed_us > 0 else 0.0


def tensor_leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, tensor) for every tensor in a nested output (dicts, lists, tuples)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [(path, value)]
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out += tensor_leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            out += tensor_leaves(item, f"{path}[{index}]")
    return out


def map_tensors(value: Any, change: Any) -> Any:
    """``value`` with ``change`` applied to every tensor in it (dicts, lists, tuples kept)."""
    import torch

    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, dict):
        return {k: map_tensors(v, change) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(v, change) for v in value)
    return value


def to_host(value: Any) -> Any:
    """``value`` with every tensor in it copied to the host."""
    return map_tensors(value, lambda tensor: tensor.detach().cpu())


def device_copy(value: Any) -> Any:
    """``value`` with every tensor in it cloned on its device (queued, in stream order)."""
    return map_tensors(value, lambda tensor: tensor.detach().clone())


INPUT_COPY_BYTES = 256 << 20  # a timed case's inputs are copied to check them afterwards up to this size
# A timed case's inputs are copied up to this size to find what a call changes in them (an
# optimizer step updates its parameters in place) and to restore that before every later call.
RESTORE_BYTES = 4 << 30


def _tensor_bytes(value: Any) -> int:
    return sum(t.numel() * t.element_size() for _, t in tensor_leaves(value))


def _chance(probability: float) -> bool:
    """True with ``probability``, from the operating system's random numbers."""
    if probability >= 1.0:
        return True
    return probability > 0.0 and secrets.randbelow(1 << 30) < probability * (1 << 30)


class TimedSide:
    """One side of a timing in this process: its module, the current case's inputs, its calls.

    ``own_file``: count the launches of kernels defined there (a candidate must launch its
    own kernels in every call); ``sample``: gather outputs at random positions after each
    call; ``keep_last``: keep the last call's outputs (a trusted side's, for the judge to
    compare: eager's); ``defer_bytes``: keep whole copies of outputs (``verify_p``) on the
    host, up to that many bytes in all, for :meth:`take_kept` after the session, instead of
    sending them in the block's frame; ``keep_samples`` False: gather as ``sample`` says,
    for the device to do what a sampled side's device does, but keep nothing (a trusted
    side timed against a sampled one); ``check_objects``: after every timed call, before its
    outputs are read, check they are the buffers allocated for it and plain values
    (``checks.output_objects``: an untrusted side's).
    """

    def __init__(self, harness: Any, module: Any, flush: Any, cycles: float, *, log: Any = None,
                 own_file: str = "", sample: bool = False, keep_last: bool = False,
                 check_inputs: bool = False, defer_bytes: int = 0, keep_samples: bool = True,
                 check_objects: bool = False) -> None:
        self.harness = harness
        self.module = module
        self.flush = flush
        self.cycles = cycles
        self.log = log
        self.own_file = own_file
        self.sample = sample
        self.keep_last = keep_last
        self.check_inputs = check_inputs
        self._inputs_before: Any = None
        self.case: Any = None
        self.inputs: Any = None
        self.last: Any = None
        self._pairs: list[tuple[Any, Any]] = []  # (start, end) events per call of a block
        self._span: Any = None  # events around a whole block
        self._positions: dict[str, Any] = {}  # pinned host room for the sampled positions, per output
        self._used: dict[str, int] = {}
        self.defer_bytes = defer_bytes
        self.keep_samples = keep_samples
        self.check_objects = check_objects
        self._kept: dict[str, list[tuple[int, Any]]] = {}  # case -> (call number in the case, outputs)
        self._kept_bytes = 0
        self._calls = 0  # timed calls of the current case so far
        # Inputs the case's first call changed (their paths) and, for each, (the tensor, its
        # value before any call): restored before every later call, outside the timed span.
        self.mutates: list[str] = []
        self._restore: list[tuple[Any, Any]] = []

    def _call(self) -> Any:
        outputs = self.harness.allocate(self.case, self.inputs)
        self.harness.run(self.module, self.case, self.inputs, outputs)
        return outputs

    def _restore_inputs(self) -> None:
        """Put back what the first call changed in the inputs (queued on the stream, before the
        busy-wait and the flush of the next call): a task that updates its inputs in place (an
        optimizer step) is timed on the same inputs every call, as both sides are, and its
        timed outputs are one call's, as the reference's for the timing seed are. Outside
        autograd: a parameter is a leaf that requires grad (KernelBench-X's Adam), which
        autograd would not let an in-place copy write."""
        if not self._restore:
            return
        import torch

        with torch.no_grad():
            for tensor, value in self._restore:
                tensor.copy_(value)

    def _find_changes(self, pristine: Any) -> None:
        """After the case's first call: which inputs it changed, kept for ``_restore_inputs``."""
        from geak_evaluator_triton.checks.input_mutation import mutated_inputs

        self.mutates = mutated_inputs(pristine, self.inputs) if pristine is not None else []
        now, before = dict(tensor_leaves(self.inputs)), dict(tensor_leaves(pristine))
        self._restore = [(now[p], before[p]) for p in self.mutates
                         if p in now and p in before and now[p].shape == before[p].shape]

    def start_case(self, task: Any, case: Any, seed: int, warmup_ms: float,
                   settle: Callable[[], Any] | None = None) -> dict[str, Any]:
        """Draw the case's inputs on ``seed``, call once (compiles, autotunes), then warm up
        for ``warmup_ms``: the host time of a call (upper quartile) sizes the busy-wait, and
        one call timed alone estimates its device time. ``settle`` is called between the
        first call and the warm-up (:func:`serve` pins the calling thread there, after the
        thread pools a first call starts)."""
        import torch

        from geak_evaluator_triton.child_common import make_inputs

        entered = time.perf_counter()
        self.case = case
        self._calls = 0
        self.inputs = make_inputs(self.harness, task, case, seed, "stage1")
        size = _tensor_bytes(self.inputs)
        pristine = None
        if size <= RESTORE_BYTES or (self.check_inputs and size <= INPUT_COPY_BYTES):
            from geak_evaluator_triton.checks.input_mutation import snapshot_inputs

            pristine = snapshot_inputs(self.inputs)
        if self.check_inputs and size <= INPUT_COPY_BYTES:
            self._inputs_before = pristine
        self._call()
        torch.cuda.synchronize()
        self._find_changes(pristine)
        del pristine
        if settle is not None:
            settle()
        host_us: list[float] = []
        walls: list[float] = []
        began = time.perf_counter()
        with collector_paused():  # the host's times size the busy-wait of blocks timed so too
            while True:
                self._restore_inputs()
                before = time.perf_counter()
                self._call()
                host_us.append((time.perf_counter() - before) * 1e6)
                torch.cuda.synchronize()
                walls.append((time.perf_counter() - before) * 1e3)
                if (time.perf_counter() - began) * 1e3 >= warmup_ms and len(host_us) >= MIN_WARMUP_CALLS:
                    break
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self._restore_inputs()
        start.record()
        self._call()
        end.record()
        end.synchronize()
        self._span = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        # The busy-wait is sized on the upper quartile of the host's times, not their median:
        # a call queued late is not counted, and many of them lengthen the busy-wait
        # (timing_loop.time_case).
        upper = statistics.quantiles(host_us, n=4)[2] if len(host_us) >= 4 else max(host_us)
        return {"launch_us": upper, "estimate_ms": max(start.elapsed_time(end), 1e-6),
                "call_ms": statistics.median(walls), "wall_ms": (time.perf_counter() - entered) * 1e3}

    def block(self, calls: int, hold_us: float, verify_p: float = 0.0, reservoir: bool = False) -> dict[str, Any]:
        """``calls`` timed calls (:meth:`_block`), with Python's garbage collector paused
        (:func:`collector_paused`)."""
        with collector_paused():
            return self._block(calls, hold_us, verify_p, reservoir)

    def _block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]:
        """``calls`` timed calls, queued back to back and synchronised once at the end.

        After each call returns, and before the next is queued, trusted code queues the
        checks of its outputs on the same stream, so that the device runs them right after
        the call, in stream order, before anything a later call queues there: gathers at
        positions drawn then from the operating system's random numbers, and,
        with probability ``verify_p`` decided then (``reservoir``: exactly one call of the
        block, each equally likely), a copy of the whole outputs. Work a call defers to a
        later call is not in what these see."""
        import torch

        hold_cycles = int(self.cycles * hold_us) if hold_us > 0 else 0
        while len(self._pairs) < calls:
            self._pairs.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        first, last = self._span
        out: dict[str, Any] = {"latencies": [], "gaps": [], "own": [], "samples": [], "verified": []}
        gathered: list[Any] = []
        copies: list[tuple[int, Any]] = []
        late: list[int] = []
        objects: list[str] = []
        began = time.perf_counter()
        first.record()
        if hold_cycles:
            # A lead-in: the device waits while the host sets the block's first call up (it
            # was idle, or another process's block just ended), so that call is not late.
            torch.cuda._sleep(hold_cycles)
        for index in range(calls):
            start, end = self._pairs[index]
            outputs = self.harness.allocate(self.case, self.inputs)
            allocation = record_outputs(outputs) if self.check_objects else None
            mark = self.log.mark() if self.log is not None else 0
            self._restore_inputs()  # before the busy-wait: outside the call's events
            if hold_cycles:
                torch.cuda._sleep(hold_cycles)
            if self.flush is not None:
                self.flush.zero_()
            start.record()
            self.harness.run(self.module, self.case, self.inputs, outputs)
            # The device passed the start event before the host had queued the call: it sat
            # idle inside the timed span (the busy-wait was shorter than the host's path).
            if start.query():
                late.append(index)
            end.record()
            if allocation is not None:  # before anything reads the outputs
                outputs, found = settle_outputs(outputs, allocation)
                objects += [problem for problem in found if problem not in objects]
            if self.own_file:
                out["own"].append(own_launches(self.log.since(mark), self.own_file))
            if self.sample:
                gathered.append(self._gather(outputs))
            if reservoir:
                if secrets.randbelow(index + 1) == 0:
                    copies = [(index, device_copy(outputs))]
            elif _chance(verify_p):
                copies.append((index, device_copy(outputs)))
            if self.keep_last:
                self.last = outputs
        last.record()
        torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - began) * 1e3
        out["latencies"] = [start.elapsed_time(end) for start, end in self._pairs[:calls]]
        # Host time the device span did not cover, per call: launch and return overheads,
        # and work the calls left on other streams, which the synchronisation waited for.
        out["gaps"] = [max(0.0, wall_ms - first.elapsed_time(last)) / calls] * calls
        out["samples"] = _to_host_samples(gathered) if self.keep_samples else []
        kept = [(self._calls + index, to_host(outputs)) for index, outputs in copies]
        self._calls += calls
        size = sum(_tensor_bytes(outputs) for _, outputs in kept)
        if kept and self._kept_bytes + size <= self.defer_bytes:
            self._kept.setdefault(self.case.name, []).extend(kept)
            self._kept_bytes += size
            out["deferred"] = len(kept)
        else:
            out["verified"] = kept
        out["late_at"] = late
        if self.check_objects:
            out["objects"] = objects[:5]
        out["device_ms"] = first.elapsed_time(last)
        out["wall_ms"] = (time.perf_counter() - began) * 1e3
        return out

    def take_kept(self) -> dict[str, list[tuple[int, Any]]]:
        """The whole copies kept for after the session, per case (and forget them)."""
        kept, self._kept, self._kept_bytes = self._kept, {}, 0
        return kept

    def _gather(self, outputs: Any) -> dict[str, Any]:
        """Outputs at random positions of each tensor, gathered on the device after the call:
        {path: (flat positions on the host, values on the device)}."""
        import numpy as np
        import torch

        gathered: dict[str, Any] = {}
        for path, tensor in tensor_leaves(outputs):
            count = tensor.numel()
            if count == 0:
                continue
            size = min(SAMPLES_PER_TENSOR, count)
            if path not in self._positions or self._positions[path].numel() < size * MAX_BLOCK_CALLS:
                self._positions[path] = torch.empty(size * MAX_BLOCK_CALLS, dtype=torch.int64, pin_memory=True)
                self._used[path] = 0
            used = self._used[path] % MAX_BLOCK_CALLS
            self._used[path] = used + 1
            pinned = self._positions[path][used * size:(used + 1) * size]
            drawn = (np.frombuffer(os.urandom(8 * size), dtype=np.uint64) % np.uint64(count)).astype(np.int64)
            pinned.numpy()[:] = drawn
            flat = pinned.to(tensor.device, non_blocking=True)
            # take: flat positions in row-major order, on any strides, in one kernel
            gathered[path] = (torch.from_numpy(drawn), torch.take(tensor.detach(), flat))
        return gathered

    def end_case(self) -> dict[str, Any]:
        import torch

        out: dict[str, Any] = {}
        if self.keep_last and self.last is not None:
            out["outputs"] = to_host(self.last)
        if self._inputs_before is not None:
            from geak_evaluator_triton.checks.input_mutation import mutated_inputs

            out["mutated"] = mutated_inputs(self._inputs_before, self.inputs)
        out["mutates"] = list(self.mutates)  # what this side's first call changed in its inputs
        self.inputs = self.last = self._inputs_before = None
        self._restore, self.mutates = [], []
        torch.cuda.empty_cache()
        return out


def _to_host_samples(gathered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A block's gathered values on the host, one copy per output path (not one per call)."""
    import torch

    hosted: list[dict[str, Any]] = [{} for _ in gathered]
    paths = {path for call in gathered for path in call}
    for path in paths:
        having = [i for i, call in enumerate(gathered) if path in call]
        values = torch.cat([gathered[i][path][1] for i in having]).cpu()
        offset = 0
        for i in having:
            positions, found = gathered[i][path]
            hosted[i][path] = (positions, values[offset:offset + found.numel()].clone())
            offset += found.numel()
    return hosted


def median_interval(ordered: list[float]) -> float:
    """Half-width of the distribution-free 95 % interval of the median, relative to it.

    For n sorted samples the interval runs from the j-th to the k-th value with
    j, k = (n -/+ 1.96 sqrt(n)) / 2 (the binomial order-statistic bound); below
    six samples no such interval exists and the answer is infinite.
    """
    n = len(ordered)
    if n < 6:
        return math.inf
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    median = statistics.median(ordered)
    if median <= 0:
        return math.inf
    return (ordered[hi] - ordered[lo]) / 2 / median


TIMING_COMMANDS = ("case", "block", "case_done")


def pin_calling_thread(cpu: int) -> int | None:
    """Run the calling thread alone on ``cpu`` (the judge's ``timing_session.calling_cpu``:
    the same core for both sides' timed calls); the CPU, or None where it could not be set.
    The judge puts every thread back on its CPUs after the session.

    A thread started from the calling thread afterwards inherits its CPUs: a thread pool
    started lazily by a timed call (OpenMP's, a solver's) would run beside the calling
    thread on its one core. :func:`serve` therefore pins only after a case's first call."""
    return cpu if _calling_thread_on({cpu}) else None


def spread_calling_thread(cpus: set[int] | None) -> None:
    """Put the calling thread back on ``cpus`` (the session's CPUs but the calling one), so
    that the threads a case's first call starts land there and not on the calling CPU."""
    if cpus:
        _calling_thread_on(cpus)


def _calling_thread_on(cpus: set[int]) -> bool:
    """Run the calling thread on ``cpus`` only; whether that could be set."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    try:
        os.sched_setaffinity(0, cpus)  # 0: the calling thread, on Linux
    except (OSError, ValueError):
        return False
    return True


def threads_beside(cpu: int) -> int | None:
    """How many of this process's threads besides the calling one may run only on ``cpu``
    (read from ``/proc/self/task``; None where that can't be read, as in some sandboxes):
    0 once a case's calling thread has its CPU alone. Each thread's ``status`` rather than
    ``sched_getaffinity(tid)``: in a child's own PID namespace the thread ids ``/proc``
    lists are not the ones that call takes."""
    wanted = str(cpu)
    try:
        names = os.listdir("/proc/self/task")
    except OSError:
        return None
    alone = 0
    for name in names:
        try:
            with open(f"/proc/self/task/{name}/status") as status:
                for line in status:
                    if line.startswith("Cpus_allowed_list:"):
                        alone += line.split(":", 1)[1].strip() == wanted
                        break
        except OSError:
            continue  # the thread ended meanwhile, or the file can't be read
    return max(alone - 1, 0)


class _Pin:
    """``settle`` for :meth:`TimedSide.start_case`: puts the calling thread alone on ``cpu``
    (:func:`pin_calling_thread`) when called; ``pinned``: the CPU it took, or None."""

    def __init__(self, cpu: int) -> None:
        self.cpu = cpu
        self.pinned: int | None = None

    def __call__(self) -> None:
        self.pinned = pin_calling_thread(self.cpu)


def serve(channel: Any, side: TimedSide, task: Any, cases: dict[str, Any], hide: dict[str, str] | None = None,
          checks: Any = None) -> dict[str, Any]:
    """Answer the judge's timing commands with ``side`` until another command comes (``done``,
    ``abort``, ``exit``), which is returned:

    ``{"case": {"name", "seed", "warmup_ms", "cpu"?}}`` → ``case_ready`` (the warm-up's
    figures; with ``cpu``, the case's first call runs on the session's other CPUs, then the
    calling thread takes that CPU alone for the warm-up and the blocks,
    :func:`pin_calling_thread`; ``beside``: threads left on it, :func:`threads_beside`);
    ``{"block": {"calls", "hold_us", "verify_p", "reservoir"}}`` → ``block`` (the calls'
    latencies, gaps, launches, samples, kept outputs, and ``checks()``'s findings);
    ``{"case_done": True}`` → ``case_done``. A call that raises is answered with an
    ``error`` frame (stage ``timing``) and the loop goes on waiting."""
    from geak_evaluator_triton.child_common import error_frame

    spread: set[int] | None = None
    while True:
        command = channel.receive()
        if not isinstance(command, dict) or not any(k in command for k in TIMING_COMMANDS):
            return command if isinstance(command, dict) else {}
        try:
            if "case" in command:
                ask = command["case"]
                pin = _Pin(int(ask["cpu"])) if ask.get("cpu") is not None else None
                if pin is not None:
                    if spread is None and hasattr(os, "sched_getaffinity"):
                        # where the judge put the group (the session's CPUs but the calling one)
                        here = os.sched_getaffinity(0)
                        spread = (here - {pin.cpu}) or here
                    spread_calling_thread(spread)
                info = side.start_case(task, cases[ask["name"]], int(ask["seed"]), float(ask["warmup_ms"]), pin)
                pinned = pin.pinned if pin is not None else None
                channel.send({"kind": "case_ready", "case": ask["name"], "calling_cpu": pinned,
                              "beside": threads_beside(pinned) if pinned is not None else None, **info})
            elif "block" in command:
                ask = command["block"]
                found = side.block(int(ask["calls"]), float(ask["hold_us"]), float(ask.get("verify_p", 0.0)),
                                   bool(ask.get("reservoir")))
                if checks is not None:
                    found.update(checks())
                channel.send({"kind": "block", **found})
            elif "case_done" in command:
                channel.send({"kind": "case_done", **side.end_case()})
        except Exception as exc:
            side.inputs = side.last = None
            side._restore = []
            channel.send(error_frame("error", exc, hide, stage="timing", case=getattr(side.case, "name", None)))


def await_timing(channel: Any, harness: Any, cases: list[Any]) -> int | None:
    """After ``checked``: the timing seed once the judge holds the device, or None (abort).

    The judge first answers ``{"prepare": {"seed": T}}`` while the device is not yet held:
    the host-side work for this side's inputs on T is done here (``Harness.prefetch``) and
    the child says ``prepared``; then ``{"time": {"seed": T}}`` once the judge holds the
    device exclusively.
    """
    from geak_evaluator_triton.child_common import prefetch

    answer = channel.receive()
    if answer.get("abort"):
        return None
    if "prepare" in answer:
        seed = int(answer["prepare"]["seed"])
        began = time.perf_counter()
        for case in cases:
            prefetch(harness, case, seed)
        channel.send({"kind": "prepared", "prepare_s": round(time.perf_counter() - began, 4)})
        answer = channel.receive()
        if answer.get("abort"):
            return None
    return int(answer["time"]["seed"])


class LocalSide:
    """A :class:`TimedSide` of this process as ``timing_loop`` sees a side (the eager child
    times eager and the baseline, both trusted, in one process)."""

    untrusted = False
    stoppable = False  # both sides in this one process

    def __init__(self, side: TimedSide, task: Any, cases: dict[str, Any]) -> None:
        self.side = side
        self.task = task
        self.cases = cases

    def start_case(self, case: str, seed: int, warmup_ms: float) -> dict[str, Any]:
        return self.side.start_case(self.task, self.cases[case], seed, warmup_ms)

    def block(self, calls: int, hold_us: float, verify_p: float, reservoir: bool) -> dict[str, Any]:
        return self.side.block(calls, hold_us, verify_p, reservoir)

    def end_case(self) -> dict[str, Any]:
        return self.side.end_case()

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass


def warm_module(harness: Any, task: Any, module: Any, cases: list[Any], seed: int) -> dict[str, float]:
    """Call ``module`` once per case on ``seed`` (compiles, autotunes), then once more timed
    alone: each case's estimated device time, which weighs it in the aggregate. Inputs and
    outputs are dropped as it goes."""
    import torch

    from geak_evaluator_triton.child_common import make_inputs

    estimates = {}
    for case in cases:
        inputs = make_inputs(harness, task, case, seed, "stage1")
        harness.run(module, case, inputs, harness.allocate(case, inputs))
        outputs = harness.allocate(case, inputs)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        harness.run(module, case, inputs, outputs)
        end.record()
        end.synchronize()
        estimates[case.name] = max(start.elapsed_time(end), 1e-6)
        del inputs, outputs
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return estimates
