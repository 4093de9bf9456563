"""Imported by a spare child while it waits for a job: the start-up every job pays anyway.

Python, torch, Triton and the judge's child modules are imported, and on a GPU
the CUDA context is created, before any job (and so before any candidate code)
reaches the process.
"""

import os

import torch
import triton  # noqa: F401
import triton.language  # noqa: F401

import geak_evaluator_triton.child  # noqa: F401
import geak_evaluator_triton.guards  # noqa: F401

if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
    torch.cuda.init()
    torch.empty(1, device="cuda")
