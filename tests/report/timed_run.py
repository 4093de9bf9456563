"""A run store with GPU timings, written through the run store's own API.

The machines the tests run on have no GPU, so the judge times nothing there; this
builds the store a timed run leaves (candidates, LLM calls, verdicts with per-shape
latencies on an H100) from figures chosen for the tests, so that the speedup,
roofline and slow-to-fast parts of reports and exports have something to show.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from geak_core.api.llm import ChatRequest, ChatResponse, Message, Usage
from geak_core.api.model import Candidate, EvalResult, RunSummary, ShapeResult, TaskSummary
from geak_core.api.scaling import eager_speedup, set_speedups
from geak_core.api.tasks import EntryPoint, Task
from geak_core.engine.store import SUMMARY_FILE, RunStore

DEVICE = "NVIDIA H100 80GB HBM3"
H100_BANDWIDTH_GBS = 3350.0
EAGER_OVER_REFERENCE = 1.5  # vector_add has a PyTorch eager equivalent, 1.5x slower than the reference

TASKS = {
    "vector_add": Task(suite="rocm", id="vector_add", instruction="add", harness="m:H",
                       entry_points=[EntryPoint("add_kernel")], difficulty=1, category="Math"),
    "matmul": Task(suite="rocm", id="matmul", instruction="matmul", harness="m:H",
                   entry_points=[EntryPoint("matmul_kernel")], difficulty=3, category="GEMM"),
}

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
{body}
'''
BODIES = [
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))",  # no mask: fails
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)",
    "    if n > 0:\n        x = tl.load(x_ptr + offs, mask=mask, eviction_policy='evict_first')\n"
    "        tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)",
]


def _shapes(task_id: str, candidate_ms: list[float]) -> list[ShapeResult]:
    shapes = []
    for i, ms in enumerate(candidate_ms):
        if task_id == "vector_add":
            n = 2 ** (20 + 2 * i)
            flops, nbytes, dtype, ref = float(n), 12.0 * n, "float32", 0.01 * (4 ** i)
        else:
            m = 1024 * (i + 1)
            flops, nbytes, dtype, ref = 2.0 * m ** 3, 6.0 * m * m, "float16", 0.05 * (i + 1) ** 3
        seconds = ms * 1e-3
        gbs, tflops = nbytes / seconds / 1e9, flops / seconds / 1e12
        peak = 989.4 if dtype == "float16" else 67.0
        bound = "compute" if flops / nbytes >= peak * 1e12 / (H100_BANDWIDTH_GBS * 1e9) else "memory"
        shapes.append(ShapeResult(case=f"case{i}_{dtype}", reference_ms=ref, candidate_ms=ms, flops=flops,
                                  bytes=nbytes, dtype=dtype, achieved_gbs=gbs, achieved_tflops=tflops,
                                  roofline_fraction=max(gbs / H100_BANDWIDTH_GBS, tflops / peak),
                                  bound=bound,
                                  eager_ms=ref * EAGER_OVER_REFERENCE if task_id == "vector_add" else None))
    return shapes


def _verdict(task_id: str, candidate_id: str, step: int, lineage: int, method: str) -> EvalResult:
    if step == 0:
        return EvalResult(task_id=task_id, candidate_id=candidate_id, failed_stage="run",
                          reason="stage1 case 'case0' raised IndexError: out of bounds",
                          error="Traceback ...\nIndexError: out of bounds", device=DEVICE, mode="gpu")
    base = 0.011 if task_id == "vector_add" else 0.055
    scale = (1.0 if step == 1 else 0.6) * (1.0 + 0.25 * lineage)
    shapes = _shapes(task_id, [base * scale * (4 ** i if task_id == "vector_add" else (i + 1) ** 3)
                               for i in range(2)])
    fractions = [s.roofline_fraction for s in shapes]
    result = EvalResult(task_id=task_id, candidate_id=candidate_id, call_ok=True, correct=True, shapes=shapes,
                        speedup_vs_eager=eager_speedup(shapes, method),
                        roofline_fraction=sum(fractions) / len(fractions), performance_measured=True,
                        performance_note="CUDA-event medians", device=DEVICE, mode="gpu")
    return set_speedups(result, method)  # as the judge fills them


RECIPE = """[run]
name = "{name}"
seed = 0

[agent]
iterations = 3
lineages = 2

[llm]
backend = "openai"
model = "{model}"

[retriever]
name = "{retriever}"

[optimizer]
name = "opro"

[evaluator]
name = "triton"
speedup_method = "{method}"
"""


def make_timed_run(output_dir: Path, name: str = "timed", model: str = "gpt-test",
                   retriever: str = "codesim", method: str = "sum") -> Path:
    """A finished two-task, two-lineage, three-iteration run: each lineage fails, is fixed,
    then made faster; its verdicts' headline speedup is ``method`` (the judge's
    ``speedup_method``; every aggregate is filled). Returns the run folder."""
    store = RunStore.create(output_dir, name, RECIPE.format(name=name, model=model, retriever=retriever, method=method),
                            {"gpu": DEVICE})
    kinds = ["generate", "reflect", "optimize"]
    summaries = []
    for task_id, task in TASKS.items():
        for lineage in range(2):
            parent = None
            for step, kind in enumerate(kinds):
                candidate_id = f"{task_id}/L{lineage}/I{step}"
                code = KERNEL.format(name=task.entry_points[0].name, body=BODIES[step])
                reply = f"Strategy: step {step}.\n```python\n{code}```\n"
                call_id = f"call-{task_id}-{lineage}-{step}"
                request = ChatRequest(messages=[Message("system", "You write Triton kernels."),
                                                Message("user", f"## Task `{task_id}` ({kind})")],
                                      meta={"purpose": kind})
                response = ChatResponse(texts=[reply], usage=Usage(100 + step, 50 + step), model=model,
                                        cost_usd=0.001)
                store.record_llm_call(
                    call_id=call_id, key=call_id, call_key=call_id, backend="openai",
                    identity={"model": model}, request=request.to_dict(), response=response.to_dict(),
                    error=None, latency_s=0.5, prompt_tokens=100 + step, completion_tokens=50 + step,
                    cost_usd=0.001,
                    meta={"task": f"rocm/{task_id}", "lineage": lineage, "iteration": step, "purpose": kind})
                candidate = Candidate(candidate_id, task_id, code, lineage, step, kind, f"step {step}",
                                      parent, call_id)
                store.record_candidate(candidate)
                result = _verdict(task_id, candidate_id, step, lineage, method)
                store.record_evaluation(candidate, result)
                parent = candidate_id
        summaries.append(TaskSummary(task_id, task.difficulty, task.category, lineages=2, samples=6,
                                     call_ok=True, correct=True, correct_lineages=2))
    summary = RunSummary(store.run_id, "finished", summaries,  # what the report reads: task facts
                         speedup_method=method)
    store.set_meta("status", "finished")
    store.write_json(SUMMARY_FILE, summary.to_dict())
    store.close()
    return store.dir


__all__ = ["DEVICE", "EAGER_OVER_REFERENCE", "TASKS", "make_timed_run"]


def with_levels(timed_run: Path, tmp_path: Path) -> Path:
    """A copy of a timed run whose summary is as a KernelBench run leaves it: vector_add at
    level 1, matmul (no PyTorch eager equivalent) at level 2."""
    run_dir = Path(shutil.copytree(timed_run, tmp_path / timed_run.name))
    path = run_dir / "summary.json"
    data = json.loads(path.read_text())
    for task in data["tasks"]:
        task["level"] = 1 if task["task_id"] == "vector_add" else 2
        task["has_eager"] = task["task_id"] == "vector_add"
    path.write_text(json.dumps(data))
    return run_dir
