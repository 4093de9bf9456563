"""A local Ray cluster per test module, and the quickstart judged locally to compare with.

The cluster is started in the test process (``ray.init``, no dashboard, a small
object store, its own temporary folder so that no other cluster on the machine
is found or disturbed); runs started as subprocesses join it by its address.
Its workers inherit this process's environment: the bundled plugins only
(``GEAK_LOAD_PLUGINS``) and the Triton interpreter.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator

import pytest
from ray_support import QUICKSTART, cli, only_run, run_verdicts

CLUSTER_CPUS = 2


@contextlib.contextmanager
def process_state_kept() -> Iterator[None]:
    """Undo what connecting to Ray leaves in this process (variables, a SIGTERM handler, an
    excepthook), so the tests after these run as they would without them."""
    environ, hook, handler = dict(os.environ), sys.excepthook, signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(environ)
        sys.excepthook = hook
        signal.signal(signal.SIGTERM, handler)


@pytest.fixture
def ray_state_kept() -> Iterator[None]:
    with process_state_kept():
        yield


@pytest.fixture(scope="module")
def ray_cluster():
    """The address of a fresh local cluster of ``CLUSTER_CPUS`` CPU workers."""
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized(), "another test left Ray connected"
    folder = tempfile.mkdtemp(prefix="geak-ray-", dir="/tmp")
    with process_state_kept():
        ray.init(num_cpus=CLUSTER_CPUS, include_dashboard=False, log_to_driver=False,
                 object_store_memory=100 * 1024**2, _temp_dir=folder, namespace="geak-tests")
        try:
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def local_quickstart(tmp_path_factory) -> dict[str, tuple]:
    """The verdict classes of the quickstart judged on this machine (the local executor)."""
    out = tmp_path_factory.mktemp("local-quickstart")
    proc = cli("run", str(QUICKSTART), "--output-dir", str(out), cwd=out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return run_verdicts(only_run(out))
