"""What the judge's in-process checks share, in the candidate's child (and the timed sides').

* ``LaunchLog``: every Triton launch (``JITFunction.run`` on a GPU,
  ``InterpretedFunction.run`` under the interpreter) is recorded with the file
  that defines the kernel and whether an entry point made it; the launch check
  (``checks.launches``) reads it, and so does every timed call of a candidate.
* ``base_function``, ``kernel_file``: the Python function under a kernel's
  wrappers and the file that defines it (the launch log and ``checks.contract``).
* ``package_dir``: where an installed package lives (frames of torch's and
  Triton's own code are not the candidate's).
* ``install_interpreter_autotune_shim``: under the interpreter, autotuning keeps
  the first config (no GPU timer there).

The checks themselves, each with its detection, its frame and its
interpretation, are the modules of ``checks/`` (docs/evaluator.md, "Where each
check lives"). Everything here is installed by trusted code *before* the
candidate is imported. A candidate that takes over its own process can in
principle defeat any in-process check; these raise the bar against the cheats
generated code actually attempts, and the decisive comparisons happen in the
judge's process, which never runs candidate code (see docs/evaluator.md).
"""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any


def package_dir(name: str) -> str:
    module = importlib.import_module(name)
    return os.path.dirname(os.path.abspath(module.__file__ or ""))


# ---------------------------------------------------------------------------
# Launch log
# ---------------------------------------------------------------------------


def base_function(kernel: Any) -> Any:
    """The Python function under a chain of Autotuner / Heuristics / JIT wrappers."""
    obj = kernel
    for _ in range(16):
        if inspect.isfunction(obj):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def kernel_file(kernel: Any) -> str:
    fn = base_function(kernel)
    code = getattr(fn, "__code__", None)
    return os.path.abspath(code.co_filename) if code is not None else "?"


class LaunchLog:
    """Records every top-level Triton launch in this process."""

    def __init__(self) -> None:
        self.launches: list[tuple[str, str, bool]] = []  # (kernel, defining file, from an entry point)
        self.enabled = True
        self.inside_entry_point = lambda: False

    def mark(self) -> int:
        return len(self.launches)

    def since(self, mark: int) -> list[tuple[str, str, bool]]:
        return self.launches[mark:]

    def install(self) -> None:
        from triton.runtime.jit import JITFunction

        targets: list[type] = [JITFunction]
        if os.environ.get("TRITON_INTERPRET") == "1":
            from triton.runtime.interpreter import InterpretedFunction

            targets.append(InterpretedFunction)
        log = self
        for cls in targets:
            original = cls.run

            def counted_run(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if not kwargs.get("warmup", False) and log.enabled:
                    fn = base_function(self)
                    log.launches.append(
                        (getattr(fn, "__name__", "?"), kernel_file(self), log.inside_entry_point())
                    )
                return _original(self, *args, **kwargs)

            counted_run.__qualname__ = f"{cls.__name__}.run"
            cls.run = counted_run  # type: ignore[method-assign]


def install_interpreter_autotune_shim() -> None:
    """Under the interpreter there is no GPU timer: autotuning keeps the first (pruned) config.

    Triton's autotuner would otherwise fail looking for an active GPU driver.
    """
    from triton.runtime.autotuner import Autotuner

    def first_config_wins(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        return [0.0, 0.0, 0.0]

    Autotuner._bench = first_config_wins  # type: ignore[method-assign]
