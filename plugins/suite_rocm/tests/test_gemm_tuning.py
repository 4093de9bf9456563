"""The gemm reference tunes as the original does on a GPU, and not under the interpreter.

Outside the interpreter the module is imported in a process of its own (decorating needs
no GPU): a kernel module built for the GPU in this process would leave Triton's language
functions unusable by the interpreted kernels of later tests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from geak_core.api.harness import _find_tuned_keys
from geak_suite_rocm.suite import RocmSuite

REFERENCE = RocmSuite().get("gemm").reference
ORIGINAL_BLOCKS = [[128, 128, 128], [256, 128, 64], [256, 256, 128], [256, 256, 64], [256, 256, 64],
                   [128, 256, 32], [128, 128, 32]]

PROBE = r"""
import importlib.util, json, sys
import torch
from geak_core.api.harness import _find_tuned_keys
spec = importlib.util.spec_from_file_location("gemm_reference", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
k = m.matmul_kernel
def args(a=torch.float16, b=torch.float16, scale=None, act="", col_a=False, col_b=False):
    return {"a_ptr": torch.zeros(64, 32, dtype=a), "b_ptr": torch.zeros(32, 48, dtype=b), "APPLY_SCALE": scale,
            "ACTIVATION": act, "stride_ak": 64 if col_a else 1, "stride_bn": 32 if col_b else 1}
def tried(named, **kw):
    return [k.configs.index(c) for c in m.tuned_configs(k.configs, named, **kw)]
print(json.dumps({
    "type": type(k).__name__,
    "blocks": [[c.kwargs[n] for n in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")] for c in k.configs],
    "stages": sorted({c.num_stages for c in k.configs}),
    "keys": list(k.keys),
    "tuned_keys": sorted(_find_tuned_keys(k)),
    "hip": torch.version.hip is not None,
    "fp16": tried({}, **args()),
    "fp32": tried({}, **args(torch.float32, torch.float32)),
    "positional": tried(args()),
    "untuned": [tried({}, **a) for a in (args(scale="tensor"), args(act="leaky_relu"), args(col_a=True),
                args(col_b=True), args(torch.int8, torch.int8), args(torch.float16, torch.float8_e4m3fn))],
}))
"""


@pytest.fixture(scope="module")
def gpu_build():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", PROBE, REFERENCE], env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_on_a_gpu_the_kernel_autotunes_over_the_originals_configs(gpu_build):
    assert gpu_build["type"] == "Autotuner"
    assert gpu_build["blocks"] == ORIGINAL_BLOCKS
    assert gpu_build["stages"] == [2]
    assert gpu_build["keys"] == ["M", "N", "K", "stride_ak", "stride_bn"]
    # The harness must not pass what the autotuner and the heuristics set.
    assert {"BLOCK_SIZE_M", "BLOCK_SIZE_K", "GROUP_SIZE_M", "EVEN_K", "GRID_MN", "num_warps",
            "num_stages"} <= set(gpu_build["tuned_keys"])


def test_only_the_timed_kind_of_launch_is_tuned(gpu_build):
    # NVIDIA: the 256 x 256 tiles (configs 2, 3 and 4) are left out.
    assert gpu_build["fp16"] == (list(range(7)) if gpu_build["hip"] else [0, 1, 5, 6])
    assert gpu_build["fp32"] == gpu_build["fp16"]
    assert gpu_build["positional"] == gpu_build["fp16"]  # arguments passed positionally count too
    # Scaled, activated, column-major and 8-bit launches run the original's first config.
    assert gpu_build["untuned"] == [[0]] * 6


def test_under_the_interpreter_the_harness_tiles_are_used(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = importlib.util.spec_from_file_location("_gemm_reference_interpreted", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not _find_tuned_keys(module.matmul_kernel)
    assert type(module.matmul_kernel).__name__ != "Autotuner"
