"""The two skinny-GEMM references autotune their wrappers over the originals' configs on a GPU
(as the originals do), and not under the interpreter; their sizes and strides are annotated
``int`` as in the originals' signatures.

Outside the interpreter each module is imported in a process of its own (decorating needs no
GPU), as in test_gemm_tuning.py.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys

import pytest
from geak_core.harness import _find_tuned_keys
from geak_suite_rocm.suite import RocmSuite

PROBE = r"""
import importlib.util, json, sys
from geak_core.harness import _find_tuned_keys
spec = importlib.util.spec_from_file_location("reference", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
k = getattr(m, sys.argv[2])
print(json.dumps({
    "type": type(k).__name__,
    "configs": [[c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_warps,
                 c.num_stages] for c in k.configs],
    "amd_keys": sorted({key for c in k.configs for key in c.kwargs if not key.startswith("BLOCK")}),
    "keys": list(k.keys),
    "tuned_keys": sorted(_find_tuned_keys(k)),
    "core_tuned": type(m.triton_matmul_kernel).__name__ != "JITFunction",
    "annotations": [{p.name: p.annotation for p in fn.params if not p.is_constexpr}
                    for fn in (m.triton_matmul_kernel, k.fn.fn)],
}))
"""

# (task, wrapper, the original's configs as (BM, BN, BK, warps, stages), counting its kpack pairs)
CASES = [
    ("multreduce_matmul_dot_kernel", "triton_dot_matmul_kernel",
     [[16, n, k, w, 2] for n, k, _, w in itertools.product((16, 32), (128, 256, 512), (1, 2), (1, 2))]),
    ("triton_multreduce_matmul_kernel", "triton_multreduce_matmul_kernel",
     [[1, 64, k, 8, 2] for k, _ in itertools.product((128, 256, 512), (1, 2))]),
]


@pytest.mark.parametrize(("task_id", "wrapper", "configs"), CASES, ids=[c[0] for c in CASES])
def test_on_a_gpu_the_wrapper_autotunes_over_the_originals_configs(task_id, wrapper, configs):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    reference = RocmSuite().get(task_id).reference
    out = subprocess.run([sys.executable, "-c", PROBE, reference, wrapper], env=env, capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    built = json.loads(out.stdout.strip().splitlines()[-1])
    assert built["type"] == "Autotuner"
    assert built["configs"] == configs
    assert set(built["amd_keys"]) <= {"waves_per_eu", "matrix_instr_nonkdim", "kpack"}
    assert built["keys"] == ["M", "N", "K", "stride_bk", "stride_bn"]
    # The harness must not pass what the autotuner and the heuristics set.
    assert {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "EVEN_K", "num_warps", "num_stages"} <= set(
        built["tuned_keys"])
    assert not built["core_tuned"]  # the core is launched with the harness's blocks, as the original's
    # Sizes and strides are `int`, as in the original's signature: Triton does not turn a unit
    # stride into a constant then, and the kernel compiles to the original's layouts.
    ints = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn",
            "stride_bias")
    for found in built["annotations"]:
        assert {name: found[name] for name in ints} == dict.fromkeys(ints, "i32")
        assert {found[p] for p in ("a_ptr", "b_ptr", "c_ptr", "bias_ptr")} == {""}


@pytest.mark.parametrize(("task_id", "wrapper", "configs"), CASES, ids=[c[0] for c in CASES])
def test_under_the_interpreter_the_harness_blocks_are_used(monkeypatch, task_id, wrapper, configs):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = importlib.util.spec_from_file_location(f"_{task_id}_interpreted", RocmSuite().get(task_id).reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not _find_tuned_keys(getattr(module, wrapper))
