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
import triton
from geak_core.api.harness import _find_tuned_keys
from geak_suite_rocm.suite import RocmSuite

PROBE = r"""
import importlib.util, json, sys
from geak_core.api.harness import _find_tuned_keys
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
    "pruned_by": getattr(getattr(k, "early_config_prune", None), "__name__", None),
    "annotations": [{p.name: p.annotation for p in fn.params if not p.is_constexpr}
                    for fn in (m.triton_matmul_kernel, k.fn.fn)],
}))
"""

# (task, wrapper, the original's configs as (BM, BN, BK, warps, stages), counting its kpack pairs,
#  the wrapper's early_config_prune)
CASES = [
    ("multreduce_matmul_dot_kernel", "triton_dot_matmul_kernel",
     [[16, n, k, w, 2] for n, k, _, w in itertools.product((16, 32), (128, 256, 512), (1, 2), (1, 2))],
     "tuned_configs"),
    ("triton_multreduce_matmul_kernel", "triton_multreduce_matmul_kernel",
     [[1, 64, k, 8, 2] for k, _ in itertools.product((128, 256, 512), (1, 2))], None),
]


@pytest.mark.parametrize(("task_id", "wrapper", "configs", "pruned_by"), CASES, ids=[c[0] for c in CASES])
def test_on_a_gpu_the_wrapper_autotunes_over_the_originals_configs(task_id, wrapper, configs, pruned_by):
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
    assert built["pruned_by"] == pruned_by
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


@pytest.mark.parametrize(("task_id", "wrapper", "configs", "pruned_by"), CASES, ids=[c[0] for c in CASES])
def test_under_the_interpreter_the_harness_blocks_are_used(monkeypatch, task_id, wrapper, configs, pruned_by):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = importlib.util.spec_from_file_location(f"_{task_id}_interpreted", RocmSuite().get(task_id).reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not _find_tuned_keys(getattr(module, wrapper))


def _dot_reference(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = importlib.util.spec_from_file_location(
        "_dot_reference_pruning", RocmSuite().get("multreduce_matmul_dot_kernel").reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dot_reference_tunes_only_row_major_b_and_each_nvidia_config_once(monkeypatch):
    """Column-major B is only checked for correctness: tuning each such shape compiled and timed
    all 24 configs (20-29 s a shape on an H100), so there the first config runs untried."""
    m = _dot_reference(monkeypatch)
    monkeypatch.setattr(m, "_hip", lambda: False)
    configs = [triton.Config(dict(c.kwargs), num_warps=c.num_warps, num_stages=c.num_stages)
               for c in m.ORIGINAL_CONFIGS]
    column_major = m.tuned_configs(configs, {"M": 1, "N": 4096, "K": 4096, "stride_bk": 1, "stride_bn": 4096})
    assert column_major == configs[:1]
    row_major = m.tuned_configs(configs, {"M": 128, "N": 8192}, K=4096, stride_bk=8192, stride_bn=1)
    shapes = [(c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_warps) for c in row_major]
    assert len(row_major) == 12 and len(set(shapes)) == 12  # the kpack pairs, tried once each
    assert set(shapes) == {(c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_warps) for c in configs}
    monkeypatch.setattr(m, "_hip", lambda: True)  # on AMD, kpack matters: all 24
    assert m.tuned_configs(configs, {"stride_bn": 1}) == configs
