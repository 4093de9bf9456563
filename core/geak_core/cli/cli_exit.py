"""How the ``geak-core`` process ends after a command that may have started native threads.

A command that judged, ran or tuned kernels may leave threads of native libraries running
in this process when it returns: torch's (its CUDA runtime, once the judge asked the driver
about the devices; its CPU thread pools, once the judge compared outputs), Triton's, Ray's.
A C++ ``std::thread`` still joinable when ``exit()`` runs the libraries' static destructors
aborts the process (``terminate called without an active exception``, status 134): seen on an
H200 once in six ``geak-core eval`` runs, after ``wrote 13 records``, every output complete
and the command's exit status lost.

So the console script (``geak_core.cli.entry``) has such a command's process leave through
``os._exit`` once Python's own shutdown has done what any output depends on. ``NativeExit``
is an ``atexit`` handler registered before the command runs, so Python runs it after joining
every non-daemon thread (a thread pool's workers included) and after every exit handler
registered later (torch's, Ray's ``shutdown``, ``weakref.finalize``'s clean-ups of temporary
folders). It shuts ``logging`` down (whose handler, registered at its import, would run after
it), flushes stdout and stderr, and leaves with the status the command decided. Skipped: the
interpreter's teardown and the native static destructors, which no output depends on. The
run store commits every write as it is made and is closed when the run ends, and ``-o/--out``
files are written whole (``atomic_write``), before any of this.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from collections.abc import Callable, Collection

#: Commands that may start native threads in this process: the agent (``run``, ``optimize``,
#: ``ablation``) and the judge (``eval``, ``tune``, ``profile``) use torch and Triton here, and ``doctor``
#: asks torch about the GPUs.
NATIVE_COMMANDS = frozenset({"run", "eval", "tune", "optimize", "ablation", "doctor", "profile"})


def exit_status(code: object) -> int:
    """The status Python gives a process ended by ``SystemExit(code)``: None is 0, an int
    itself (as ``exit()`` keeps it: its low 8 bits), anything else (a message Python prints) 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    return 1


class NativeExit:
    """The process's way out after ``command``, if it is one of ``commands`` (by default
    ``NATIVE_COMMANDS``): ``install`` registers it with ``atexit``; the group's callback names
    the command (``command``); ``ended`` keeps the status the command ended with (an exception
    that escaped it, which Python prints, leaves status 1, as Python's own)."""

    def __init__(self, commands: Collection[str] | None = None,
                 leave: Callable[[int], object] = os._exit) -> None:
        self.commands = NATIVE_COMMANDS if commands is None else frozenset(commands)
        self.command: str | None = None
        self.status = 1
        self._leave = leave

    def install(self) -> NativeExit:
        atexit.register(self.at_exit)
        return self

    def ended(self, code: object) -> None:
        self.status = exit_status(code)

    def at_exit(self) -> None:
        if self.command not in self.commands:
            return  # Python's own exit: nothing native was started
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is None:
                continue
            try:
                stream.flush()
            except (OSError, ValueError):  # a reader gone, or a stream closed: nothing to keep
                pass
        self._leave(self.status)
