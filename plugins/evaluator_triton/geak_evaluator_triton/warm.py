"""Imported by a spare child while it waits for a job: the start-up every job pays anyway.

Python, torch, Triton and the judge's child modules are imported, and on a GPU
the CUDA context is created and Triton's driver utilities loaded, before any
job (and so before any candidate code) reaches the process; the context is
created only while no candidate is being timed on the device (the judge's
device lock file, held shared here and exclusively by timing). Torch's function
and dispatch modes are entered once too: the first entry imports
``torch._dynamo`` (one to five seconds, by host: ``bench/child_start.py``), which
every candidate child pays when it sets up its compute monitor.
"""

import os

import torch
import triton  # noqa: F401
import triton.language  # noqa: F401

import geak_evaluator_triton.autotuning  # noqa: F401
import geak_evaluator_triton.checks.contract  # noqa: F401
import geak_evaluator_triton.checks.input_mutation  # noqa: F401
import geak_evaluator_triton.checks.launches  # noqa: F401
import geak_evaluator_triton.checks.output_objects  # noqa: F401
import geak_evaluator_triton.checks.tampering  # noqa: F401
import geak_evaluator_triton.child_jobs  # noqa: F401
import geak_evaluator_triton.guards  # noqa: F401
from geak_evaluator_triton.checks.torch_compute import ComputeMonitor

ComputeMonitor(__file__, allow_copies=False, gpu=False)  # its set-up enters the modes once



def _create_context() -> None:
    torch.cuda.init()
    torch.empty(1, device="cuda")
    try:  # the driver's compiled helpers, loaded on first use
        from triton.runtime import driver

        driver.active.get_current_stream(driver.active.get_current_device())
        # The first kernel looked up in a process pays for Triton's own hash (libtriton read
        # and hashed, a third of a second on the development machine) and the backend's
        # (ptxas asked its version): once here, while the spare waits, not in a verdict.
        from triton.compiler.compiler import make_backend
        from triton.runtime.cache import triton_key

        triton_key()
        make_backend(driver.active.get_current_target()).hash()
    except Exception:  # an older or newer Triton without these: the job does it itself
        pass


if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
    # Creating a context is work on the device: never while a candidate is being timed
    # there. The judge holds the device's lock file exclusively while it times.
    lock_path = os.environ.pop("GEAK_SPARE_DEVICE_LOCK", "")
    fd = -1
    if lock_path:
        import fcntl

        try:
            fd = os.open(lock_path, os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            pass
    try:
        _create_context()
    finally:
        if fd >= 0:
            os.close(fd)
