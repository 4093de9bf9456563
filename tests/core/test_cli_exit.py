"""How ``geak-core`` ends after a command that may have started native threads (``cli_exit``):
through ``os._exit``, with every output flushed and the status the command decided."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from geak_core.cli.cli_exit import NativeExit, exit_status

# A command ``spill`` counted among the native ones: 8 MiB to stdout, then the given ending.
# An exit handler registered before the console script's own must be skipped (the process
# left through os._exit); one the command registers runs first, and what it writes to stdout
# (after Python's own flush) still arrives.
SPILL = r"""
import atexit, sys
import click
import geak_core.cli as cli
import geak_core.cli.cli_exit as cli_exit

atexit.register(lambda: print("finalized by Python", file=sys.stderr))
cli_exit.NATIVE_COMMANDS = cli_exit.NATIVE_COMMANDS | {"spill"}

@cli.main.command("spill")
@click.argument("ending")
def spill(ending):
    atexit.register(lambda: print("written at exit"))
    line = "x" * 1023 + "\n"
    for _ in range(8192):
        sys.stdout.write(line)
    print("last line")
    if ending == "ctrl-c":
        raise KeyboardInterrupt
    sys.exit(int(ending))

cli.entry()
"""


def _spill(script: str, ending: str) -> subprocess.CompletedProcess[bytes]:
    """``script`` run with stdout a pipe, block-buffered as a user's pipe is."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", script, "spill", ending], capture_output=True,
                          timeout=60, env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})


@pytest.mark.parametrize(("ending", "status"), [("0", 0), ("1", 1), ("ctrl-c", 130)])
def test_a_native_command_flushes_all_its_stdout_to_a_pipe_and_leaves_with_its_status(ending, status):
    proc = _spill(SPILL, ending)
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == status, proc.stderr
    assert len(proc.stdout) == 8192 * 1024 + len("last line\nwritten at exit\n")
    assert lines[-2:] == ["last line", "written at exit"]
    assert "finalized by Python" not in proc.stderr.decode()
    assert ("stopped (Ctrl-C)" in proc.stderr.decode()) == (ending == "ctrl-c")


def test_other_commands_end_as_python_ends_them():
    script = SPILL.replace('cli_exit.NATIVE_COMMANDS | {"spill"}', "cli_exit.NATIVE_COMMANDS")
    proc = _spill(script, "3")
    assert proc.returncode == 3
    assert "finalized by Python" in proc.stderr.decode()


def test_the_status_is_the_one_python_gives_a_system_exit():
    assert [exit_status(c) for c in (None, 0, 1, 130, 256 + 2, "a message", True)] == [0, 0, 1, 130, 2, 1, 1]


def test_an_exit_handler_only_leaves_after_a_native_command():
    left: list[int] = []
    path = NativeExit(commands={"eval"}, leave=left.append)
    path.command = "suites"
    path.ended(0)
    path.at_exit()
    assert left == []
    path.command = "eval"
    path.ended(None)
    path.at_exit()
    assert left == [0]
