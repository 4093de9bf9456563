"""Two `geak-core run RECIPE --resume RUN` of one run at once: one resumes, the other stops."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import threading
import time

from geak_core.engine.plugins import PluginManager
from geak_core.engine.recipe import dump_toml, load_recipe
from geak_core.engine.store import HOLDER_FILE, RunLock, RunStore

from tests.agent.test_loop import ADD_OK, _cli, write_recipe
from tests.support.openai_server import OpenAIServer, Reply


def test_two_resumes_of_one_run_at_once_one_goes_ahead_the_other_exits_2(tmp_path):
    asked = threading.Event()

    def stalling(request):  # the resume that goes ahead waits here until it is killed
        asked.set()
        return Reply.stall(600, ADD_OK)

    with OpenAIServer(stalling) as server:
        path = write_recipe(tmp_path, server.base_url, iterations=1)
        recipe = load_recipe(path, PluginManager())
        with RunStore.create(tmp_path / "runs", "loop-test", dump_toml(recipe.data), {}) as store:
            store.set_meta("status", "interrupted")
            run_dir = store.dir
        procs = [_cli("run", str(path), "--resume", run_dir.name, cwd=tmp_path) for _ in range(2)]
        try:
            finished, deadline = None, time.monotonic() + 300
            while finished is None and time.monotonic() < deadline:  # the refused one ends
                for proc in procs:
                    try:
                        proc.wait(timeout=0.5)
                    except subprocess.TimeoutExpired:
                        continue
                    finished = proc
                    break
            assert finished is not None, "neither resume ended"
            going = procs[1 - procs.index(finished)]
            out = finished.stdout.read()
            assert finished.returncode == 2, out
            assert (f"error: run {run_dir.name} is being run by process {going.pid} "
                    f"on host {platform.node()}") in out
            assert asked.wait(300) and going.poll() is None
            assert len(server.requests) == 1  # asked once: the refused process asked nothing
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    # the killed one's record (a dead pid) does not block the next resume
    assert (run_dir / HOLDER_FILE).exists()
    with RunLock(run_dir):
        pass
