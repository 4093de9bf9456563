"""A run is run by one process at a time: its folder's lock (flock plus a holder record)."""

from __future__ import annotations

import errno
import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest
from geak_core.api.errors import InputError
from geak_core.engine.store import HOLDER_FILE, LOCK_FILE, RunLock, RunLocked, owner_record

HOLD = textwrap.dedent("""
    import sys, time
    from geak_core.engine.store import RunLock
    try:
        lock = RunLock(sys.argv[1]).acquire()
    except Exception as exc:
        print("refused:", exc, flush=True)
        sys.exit(2)
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()
""")


def _holder(run_dir):
    return json.loads((run_dir / HOLDER_FILE).read_text())


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_two_processes_racing_on_one_run_one_holds_it_and_the_other_is_told_who(tmp_path):
    go = [sys.executable, "-c", HOLD, str(tmp_path), "5"]
    procs = [subprocess.Popen(go, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    winner, loser = (0, 1) if procs[0].returncode == 0 else (1, 0)
    assert outs[winner].strip() == "holding"
    message = outs[loser]
    assert f"run {tmp_path.name} is being run by process {procs[winner].pid} on host {platform.node()}" in message
    assert not (tmp_path / HOLDER_FILE).exists()  # released: the record is gone, the lock file stays
    assert (tmp_path / LOCK_FILE).exists()


def test_a_live_holder_refuses_a_second_lock_until_it_lets_go(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "holding"
        with pytest.raises(RunLocked) as refused:
            RunLock(tmp_path).acquire()
        assert isinstance(refused.value, InputError) and refused.value.exit_code == 2
        assert f"process {proc.pid} on host {platform.node()}" in str(refused.value)
        assert f"kill {proc.pid}" in str(refused.value)
    finally:
        proc.kill()
        proc.wait()
    # killed: the kernel dropped its flock, and its record (a dead pid here) is taken over
    assert _holder(tmp_path)["pid"] == proc.pid
    with RunLock(tmp_path):
        assert _holder(tmp_path)["pid"] == os.getpid()
    assert not (tmp_path / HOLDER_FILE).exists()


def test_a_stale_record_of_a_dead_process_on_this_host_is_taken_over(tmp_path):
    dead = {"pid": _dead_pid(), "host": platform.node(), "pid_started": None, "started": "2024-01-01T00:00:00"}
    (tmp_path / HOLDER_FILE).write_text(json.dumps(dead))
    lock = RunLock(tmp_path).acquire()
    try:
        record = _holder(tmp_path)
        assert record["pid"] == os.getpid() and record["host"] == platform.node() and record["started"]
    finally:
        lock.release()


def test_another_hosts_record_is_refused_naming_its_host_and_pid(tmp_path):
    (tmp_path / HOLDER_FILE).write_text(json.dumps({"pid": 4242, "host": "gpu-node-7", "started": "2024-01-01"}))
    with pytest.raises(RunLocked) as refused:
        RunLock(tmp_path).acquire()
    message = str(refused.value)
    assert f"run {tmp_path.name} is being run by process 4242 on host gpu-node-7" in message
    assert f"remove {tmp_path / HOLDER_FILE}" in message
    assert _holder(tmp_path)["host"] == "gpu-node-7"  # left alone


def test_where_flock_is_refused_the_holder_record_alone_decides(tmp_path, monkeypatch):
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    first = RunLock(tmp_path).acquire()
    try:
        with pytest.raises(RunLocked, match=f"process {os.getpid()} on host"):
            RunLock(tmp_path).acquire()  # the record names a live process (this one)
    finally:
        first.release()
    (tmp_path / HOLDER_FILE).write_text(json.dumps({**owner_record(), "pid": _dead_pid(), "pid_started": None}))
    with RunLock(tmp_path):
        assert _holder(tmp_path)["pid"] == os.getpid()
