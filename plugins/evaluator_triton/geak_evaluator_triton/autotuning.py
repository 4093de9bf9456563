"""Autotuning in the judge's children: seen, allowed for, and named when it runs out of time.

Triton's ``@triton.autotune`` benchmarks every config of a kernel at each new value of its
key (the shapes, usually), compiling each config first: an expert kernel with dozens of
configs spends minutes of its child's budget before its first outputs, nearly all of it in
stage 1, where a task's shapes are first seen. On an H200 two of GEAK's ROCm kernels that
pass their own harness (``gemm``, ``multreduce_matmul_dot_kernel``) ran out of a 288 s
budget so, and the reference of the second out of its 300 s. Stage 1, stage 2 and timing run
in one child (``child_jobs.candidate``), so each key is tuned once there; Triton's on-disk
autotuning cache (option ``autotune_cache``), in the cache folder only that candidate's
program may write (``child_pool.Children.candidate_cache``), keeps the choices for the same
program's next child (a run planned again, a later judge).

* Child (trusted code, installed before the module under test is imported):
  ``find_autotuners`` lists a module's autotuners and their configs after its import (the
  candidate's ``imported`` frame, the reference's ``autotuners`` frame); ``AutotuneFrames``
  wraps ``Autotuner.run`` and ``Autotuner.prune_configs`` to send ``autotune`` when a kernel
  starts tuning a key it has not seen (before its configs are pruned) and ``autotuned``
  when its choice is made.
* Judge: ``allowance`` is the time added to that child's deadline
  (``sandbox.Replier.allow``): ``autotune_allowance_s`` a config a planned case (each case
  can bring a new key), at most ``autotune_allowance_max_s``; ``AutotuneLog`` keeps the
  frames, for the verdict's phases and for the reason of a child that runs out of time
  while tuning ("while autotuning matmul_kernel (48 configs, key #3 of 8)").

The frames come from the candidate's own process, as every frame does: a candidate could
claim autotuners it does not have, and gain at most ``autotune_allowance_max_s`` of its own
time; the verdict does not depend on them.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

AUTOTUNE = "autotune"
AUTOTUNED = "autotuned"
AUTOTUNERS = "autotuners"


class AutotunerInfo(TypedDict):
    """One autotuner of a module, as found after its import."""

    kernel: str  # the name of the function under the autotuner
    configs: int  # its configs, before any pruning


# ---------------------------------------------------------------------------
# Child side
# ---------------------------------------------------------------------------


def find_autotuners(module: Any) -> list[AutotunerInfo]:
    """The ``triton.runtime.autotuner.Autotuner`` objects among ``module``'s globals, also
    under ``@triton.heuristics`` and other wrappers (their ``fn`` chain), each once. Read
    with types and static lookups: no code of the module runs here."""
    from triton.runtime.autotuner import Autotuner

    found: dict[int, AutotunerInfo] = {}
    for value in list(vars(module).values()):
        obj = value
        for _ in range(8):
            if issubclass(type(obj), Autotuner) and id(obj) not in found:
                configs = inspect.getattr_static(obj, "configs", [])
                found[id(obj)] = {"kernel": kernel_name(obj),
                                  "configs": len(configs) if isinstance(configs, list) else 0}
            obj = inspect.getattr_static(obj, "fn", None)
            if obj is None:
                break
    return list(found.values())


def kernel_name(autotuner: Any) -> str:
    """The name of the function under an autotuner (a static lookup)."""
    base = inspect.getattr_static(autotuner, "base_fn", None)
    return base.__name__ if inspect.isfunction(base) else type(autotuner).__name__


class _TuningCache(dict):  # type: ignore[type-arg]
    """An autotuner's choices by key: the choice of the key being tuned ends its tuning.
    (Copied or unpickled, its items come back before its attributes: nothing is reported.)"""

    _frames: AutotuneFrames | None = None
    _autotuner: Any = None

    def __init__(self, choices: Mapping[Any, Any] | None = None, frames: AutotuneFrames | None = None,
                 autotuner: Any = None) -> None:
        super().__init__(choices or {})
        self._frames = frames
        self._autotuner = autotuner

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if self._frames is not None:
            self._frames.ended(self._autotuner)


class AutotuneFrames:
    """Sends ``autotune`` and ``autotuned`` frames while ``channel`` is set (a job's
    reference or candidate, for its runs and timing). ``install`` once per child, before the
    module under test is imported, so that the identity snapshot holds the wrappers."""

    def __init__(self) -> None:
        self.channel: Any = None
        self._installed = False
        self._local = threading.local()  # Autotuner.run calls in progress on this thread
        self._keys: dict[int, int] = {}  # keys tuned so far, by autotuner
        self._began: dict[int, float] = {}  # tuning under way: when it began, by autotuner

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner

        if self._installed:
            return
        self._installed = True
        frames = self
        run, prune_configs = Autotuner.run, Autotuner.prune_configs

        def reported_run(self: Any, *args: Any, **kwargs: Any) -> Any:
            frames._local.depth = getattr(frames._local, "depth", 0) + 1
            try:
                return run(self, *args, **kwargs)
            finally:
                frames._local.depth -= 1
                frames.ended(self, failed=True)  # tuning that raised: its choice never came

        def reported_prune_configs(self: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(frames._local, "depth", 0):  # run's, for a key not tuned yet
                frames.started(self)
            return prune_configs(self, *args, **kwargs)

        reported_run.__qualname__ = "Autotuner.run"
        reported_prune_configs.__qualname__ = "Autotuner.prune_configs"
        Autotuner.run = reported_run  # type: ignore[method-assign]
        Autotuner.prune_configs = reported_prune_configs  # type: ignore[method-assign]

    def started(self, autotuner: Any) -> None:
        channel = self.channel
        if channel is None or id(autotuner) in self._began:
            return
        if not isinstance(autotuner.cache, _TuningCache):
            autotuner.cache = _TuningCache(autotuner.cache, self, autotuner)
        key = self._keys[id(autotuner)] = self._keys.get(id(autotuner), 0) + 1
        self._began[id(autotuner)] = time.perf_counter()
        channel.send({"kind": AUTOTUNE, "kernel": kernel_name(autotuner), "configs": len(autotuner.configs),
                      "key": key})

    def ended(self, autotuner: Any, failed: bool = False) -> None:
        began = self._began.pop(id(autotuner), None)
        channel = self.channel
        if began is None or channel is None:
            return
        channel.send({"kind": AUTOTUNED, "kernel": kernel_name(autotuner), "key": self._keys[id(autotuner)],
                      "seconds": round(time.perf_counter() - began, 4), "failed": failed})


AUTOTUNE_FRAMES = AutotuneFrames()


def planned_cases(stages: Mapping[str, Any], timed: Iterable[str] = ()) -> int:
    """The cases a child runs (``stage1``, ``stage2`` and ``timing`` of its plan, and the
    ``timed`` ones), each once: the most new keys one autotuner can meet there."""
    names = {str(name) for stage in ("stage1", "stage2", "timing") for name in stages.get(stage) or ()}
    return len(names | set(timed))


# ---------------------------------------------------------------------------
# Judge side
# ---------------------------------------------------------------------------


def read_autotuners(value: Any) -> list[AutotunerInfo]:
    """The autotuners a child's frame lists, as far as they are well formed."""
    if not isinstance(value, list):
        return []
    return [{"kernel": str(item.get("kernel")), "configs": item["configs"]} for item in value
            if isinstance(item, dict) and type(item.get("configs")) is int and item["configs"] >= 0]


def allowance(configs: Iterable[int], cases: int, per_config_s: float, most_s: float) -> float:
    """Seconds a child is allowed beyond its budget for autotuning: ``per_config_s`` for
    each config of each autotuner at each of its ``cases`` (a new key each, at most), at most
    ``most_s``; 0 when ``per_config_s`` is."""
    if per_config_s <= 0 or most_s <= 0:
        return 0.0
    return min(most_s, per_config_s * sum(max(0, int(n)) for n in configs) * max(0, cases))


def allowance_note(seconds: float, autotuners: list[AutotunerInfo], cases: int, per_config_s: float,
                   most_s: float) -> str:
    """The clause that explains ``allowance`` in a timeout's reason."""
    configs = sum(a["configs"] for a in autotuners)
    return (f"+{seconds:.0f} s for autotuning: {per_config_s:g} s a config a case, {configs} configs "
            f"of {len(autotuners)} autotuner{'s' if len(autotuners) != 1 else ''} x {cases} "
            f"case{'s' if cases != 1 else ''}, at most {most_s:.0f} s")


def allow_for(replier: Any, autotuners: list[AutotunerInfo], cases: int, per_config_s: float,
              most_s: float) -> float:
    """Extend the child's deadline (``replier.allow``) for ``autotuners`` at ``cases``; the
    seconds allowed."""
    seconds = allowance((a["configs"] for a in autotuners), cases, per_config_s, most_s)
    if seconds > 0:
        replier.allow(seconds, allowance_note(seconds, autotuners, cases, per_config_s, most_s))
    return seconds


class AutotuneLog:
    """Judge side: one child's autotuning frames. ``cases`` (the planned cases) counts the
    keys a kernel may meet."""

    def __init__(self, cases: int = 0) -> None:
        self.cases = cases
        self.current: dict[str, Any] | None = None
        self.keys = 0
        self.seconds = 0.0

    def started(self, frame: Mapping[str, Any]) -> None:
        self.current = dict(frame)

    def ended(self, frame: Mapping[str, Any]) -> None:
        self.current = None
        seconds = frame.get("seconds")
        if isinstance(seconds, (int, float)) and seconds >= 0:
            self.seconds += float(seconds)
        if not frame.get("failed"):
            self.keys += 1

    def during(self) -> str:
        """"while autotuning K (N configs, key #k of M)" while a kernel tunes, else ""."""
        frame = self.current
        if frame is None:
            return ""
        of = f" of {self.cases}" if self.cases else ""
        return (f"while autotuning {str(frame.get('kernel'))[:100]} ({frame.get('configs')} configs, "
                f"key #{frame.get('key')}{of})")

    def phases(self) -> dict[str, float]:
        """The seconds the child's kernels spent tuning, and the keys they tuned (none: {})."""
        if not self.keys and self.current is None:
            return {}
        return {"autotune": round(self.seconds, 3), "autotune_keys": float(self.keys)}
