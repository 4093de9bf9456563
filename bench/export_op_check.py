"""From a reference file to an installed op, on a GPU: does the op run at the judge's speed?

Steps (each a real command, as a user runs them):

1. ``geak-core optimize`` on a KernelBench-format reference file (``scale_relu``: relu of
   an affine map, ``--batch`` x 8192 float32) with a scripted reply holding a Triton
   ``ModelNew`` (replay backend: no LLM), so the judge checks and times it on this GPU;
2. ``geak-core export-kernel`` of the run's winner into a package;
3. ``pip install`` of the package, its own tests (the op and ModelNew against the
   reference, ``torch.compile`` with ``fullgraph=True``, ``opcheck``);
4. the package's benchmark (``torch.ops``, ``ModelNew``, ``ModelNew`` under
   ``torch.compile``, the reference) beside the judge's candidate latency.

Writes ``OUT/export_op_check.json`` (and the logs) as it goes::

    python bench/export_op_check.py --out bench/results/export-op
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REFERENCE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x * w + b), w and b over the last dimension."""

    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim))
        self.b = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.relu(x * self.w + self.b)


batch_size = 4096
dim = 8192
SMALL_SHAPES = [{"batch_size": 4, "dim": 64}]


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''

CANDIDATE = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    col = offs % dim
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x * w + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim))
        self.b = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_relu_kernel[(triton.cdiv(n, 4096),)](x, self.w, self.b, out, n, x.shape[-1],
                                                   BLOCK=4096, num_warps=8)
        return out
'''

RECIPE = '''\
[run]
name = "export-op-check"
[llm]
backend = "replay"
mode = "scripted"
source = "script.toml"
[agent]
iterations = 1
lineages = 1
[evaluator]
name = "triton"
'''


def sh(command: list[str], log: Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}", encoding="utf-8")
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, default=4096, help="rows of the input (default 4096)")
    parser.add_argument("--small", action="store_true",
                        help="4 x 64 inputs: a smoke test of the steps on a CPU (interpreter)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    reference = REFERENCE.replace("batch_size = 4096", "batch_size = 4") \
        .replace("dim = 8192", "dim = 64") if args.small else \
        REFERENCE.replace("batch_size = 4096", f"batch_size = {args.batch}")
    (work / "scale_relu.py").write_text(reference, encoding="utf-8")
    (work / "reply.md").write_text(f"```python\n{CANDIDATE}```\n", encoding="utf-8")
    (work / "script.toml").write_text(textwrap.dedent('''\
        [[reply]]
        match = { task = "scale_relu" }
        file = "reply.md"
        '''), encoding="utf-8")
    (work / "recipe.toml").write_text(RECIPE, encoding="utf-8")
    found: dict[str, Any] = {}
    result_file = out / "export_op_check.json"

    def save() -> None:
        result_file.write_text(json.dumps(found, indent=1), encoding="utf-8")

    done = sh(["geak-core", "optimize", str(work / "scale_relu.py"), "--recipe",
               str(work / "recipe.toml"), "--output-dir", str(work / "runs"),
               "-o", str(out / "summary.json")], out / "optimize.log", cwd=work)
    found["optimize_exit"] = done.returncode
    if done.returncode != 0:
        save()
        return 1
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    task = summary["tasks"][0]
    found.update(run_id=summary["run_id"], best_speedup=task.get("best_speedup"),
                 best_speedup_vs_eager=task.get("best_speedup_vs_eager"),
                 fast_p={k: {"n": v.get("n"), "m": v.get("m")} for k, v in
                         (summary.get("fast_p") or {}).items()})
    run_dir = work / "runs" / summary["run_id"]
    log = json.loads(sh(["geak-core", "runs", "log", str(run_dir), "--json"],
                        out / "runs-log.log").stdout)
    verdict = next(e["verdict"] for e in log if e["candidate_id"] == task["best_candidate_id"])
    found["judge_shapes"] = [{k: s.get(k) for k in ("case", "candidate_ms", "reference_ms",
                                                      "eager_ms")} for s in verdict["shapes"]]
    save()
    package = out / "scale_relu_op"
    done = sh(["geak-core", "export-kernel", str(run_dir), "--task", "scale_relu", "-o",
               str(package), "--force"], out / "export.log")
    found["export_exit"] = done.returncode
    done = sh([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
               str(package)], out / "install.log")
    found["install_exit"] = done.returncode
    env = dict(os.environ) if args.small else \
        {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               str(package / "tests")], out / "package-tests.log", cwd=out, env=env)
    found["package_tests_exit"] = done.returncode
    found["package_tests"] = (done.stdout.strip().splitlines() or [""])[-1]
    save()
    done = sh([sys.executable, "-m", "geak_scale_relu.benchmark"], out / "benchmark.log",
              cwd=out, env=env)
    found["benchmark_exit"] = done.returncode
    rows = {}
    for line in done.stdout.splitlines():
        match = re.match(r"^(.*?)\s+([0-9.]+)\s+([0-9.]+)x$", line.strip())
        if match:
            rows[match.group(1).strip()] = float(match.group(2))
    found["benchmark_ms"] = rows
    judge_ms = found["judge_shapes"][0]["candidate_ms"] if found["judge_shapes"] else None
    if judge_ms:
        found["op_over_judge"] = {k: v / judge_ms for k, v in rows.items()}
    save()
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
