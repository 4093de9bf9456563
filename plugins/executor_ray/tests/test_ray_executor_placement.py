"""Where judges go on a cluster with GPUs: one per GPU by default, each on a GPU of its own (its
timing then has the GPU alone); with gpus_per_judge = 0 they take none and see none. The
cluster is a Ray instance that declares two GPUs on this CPU machine, in a child process of its
own (one Ray instance per process); the judges' evaluator works under the interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

SCRIPT = textwrap.dedent('''
    import json, tempfile
    import ray
    from geak_core.engine.plugins import PluginManager
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_executor_ray.cluster import Connection
    from geak_executor_ray.judges import RayJudges
    from geak_executor_ray.options import RayExecutorOptions

    ray.init(num_cpus=3, num_gpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024**2, _temp_dir=tempfile.mkdtemp(prefix="geak-ray-", dir="/tmp"))
    task = PluginManager().build("suite", "rocm", None).get("test_add_kernel")
    out = {}
    for gpus in (1, 0):
        settings = RayExecutorOptions(address="auto", gpus_per_judge=gpus)
        connection = Connection(settings)
        connection.open()
        judges = RayJudges(connection, "triton", TritonEvaluatorOptions(mode="auto", workers=1), settings)
        try:
            out[gpus] = {"judges": [{k: j[k] for k in ("gpus", "visible", "capacity")}
                                    for j in judges.placement()],
                         "unmet": judges.unmet_requirements(task)}
        finally:
            judges.close()
    ray.shutdown()
    print(json.dumps(out))
''')


def test_one_judge_per_gpu_each_on_its_own_gpu_or_none_with_gpus_per_judge_0(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    placed = json.loads(proc.stdout.strip().splitlines()[-1])
    on_gpus = placed["1"]["judges"]
    assert sorted(j["gpus"][0] for j in on_gpus) == ["0", "1"]  # two judges, one GPU each
    assert all(len(j["gpus"]) == 1 and j["visible"]["CUDA_VISIBLE_DEVICES"] == j["gpus"][0]
               for j in on_gpus)
    off_gpus = placed["0"]["judges"]
    assert len(off_gpus) == 3  # one per CPU
    assert all(j["gpus"] == [] and j["visible"]["CUDA_VISIBLE_DEVICES"] == "" for j in off_gpus)
    assert placed["1"]["unmet"] == placed["0"]["unmet"] == []
