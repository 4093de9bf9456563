"""The data model: candidates, evaluation results, attempts, summaries.

Every record is a dataclass that round-trips through JSON with ``to_dict`` /
``from_dict``; the run store and ``--json`` outputs use exactly these shapes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


def _from_dict(cls: type[T], data: dict[str, Any]) -> T:
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


# How a task's per-shape latencies aggregate into one speedup when nothing says otherwise:
# the mean of the per-shape ratios, the GEAK paper's figure. A verdict or summary stored
# without a method predates the choice and meant GEAK-eval's sum of latencies.
DEFAULT_SPEEDUP_METHOD = "mean_ratio"
LEGACY_SPEEDUP_METHOD = "sum"

# Flags of one case (``ShapeResult.flags``) that keep its speedup out of every aggregate: a
# case timed faster than the hardware allows did not do the work it was timed for.
UNCOUNTED_SHAPE_FLAGS = ("above_peak",)


def code_hash(code: str) -> str:
    """Content hash of candidate code, tagged with its algorithm."""
    return "sha256:" + hashlib.sha256(code.encode()).hexdigest()


@dataclass
class Candidate:
    """One piece of code proposed for one task."""

    id: str
    task_id: str
    code: str
    lineage: int = 0
    iteration: int = 0
    origin: str = "generate"  # generate | reflect | optimize | file
    strategy: str = ""
    parent_id: str | None = None
    llm_call_id: str | None = None

    @property
    def hash(self) -> str:
        return code_hash(self.code)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        return _from_dict(cls, data)


@dataclass
class ShapeResult:
    """Timing and roofline figures for one case (shape x dtype) of a task."""

    case: str
    reference_ms: float | None = None
    candidate_ms: float | None = None
    flops: float | None = None
    bytes: float | None = None
    dtype: str | None = None
    achieved_gbs: float | None = None
    achieved_tflops: float | None = None
    roofline_fraction: float | None = None
    bound: str | None = None  # "memory" | "compute"
    # PyTorch eager's latency, for tasks with a torch equivalent: reference_ms times the
    # eager / baseline ratio measured side by side in a trusted child of the judge
    eager_ms: float | None = None
    # How precisely the two latencies are known: timed repetitions per side, and the larger
    # relative half-width of the two medians' 95 % intervals (0.01: within +-1 %)
    repetitions: int | None = None
    interval: float | None = None
    # What the judge found of this case's timing (names of ``EvalResult.flags``); one of
    # ``UNCOUNTED_SHAPE_FLAGS`` leaves its speedup out of every aggregate (``counted``)
    flags: list[str] = field(default_factory=list)

    @property
    def counted(self) -> bool:
        """Whether this case's speedup may count in an aggregate: none of its flags is one of
        ``UNCOUNTED_SHAPE_FLAGS``."""
        return not any(f in UNCOUNTED_SHAPE_FLAGS for f in self.flags)

    @property
    def speedup(self) -> float | None:
        if self.reference_ms and self.candidate_ms:
            return self.reference_ms / self.candidate_ms
        return None

    @property
    def speedup_vs_eager(self) -> float | None:
        if self.eager_ms and self.candidate_ms:
            return self.eager_ms / self.candidate_ms
        return None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["speedup"] = self.speedup
        data["speedup_vs_eager"] = self.speedup_vs_eager
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShapeResult:
        return _from_dict(cls, data)


# Stages of the evaluation cascade, in order. ``failed_stage`` names the first
# that did not pass.
STAGES = ("extract", "import", "contract", "run", "stage1", "stage2", "anticheat", "timing")


@dataclass
class EvalResult:
    """The judge's verdict on one candidate.

    ``call_ok``: the candidate imported, compiled and ran on the task's inputs.
    ``correct``: every correctness check passed (only meaningful if call_ok).
    ``speedup``: reference over candidate latency, only for correct candidates
    on a GPU; ``speedup_method`` says which aggregate it is.
    ``speedup_vs_eager``: PyTorch eager over candidate latency, the same aggregate
    over the shapes with an eager latency, for tasks with a torch equivalent.
    """

    task_id: str
    candidate_id: str
    call_ok: bool = False
    correct: bool = False
    failed_stage: str | None = None
    reason: str | None = None
    error: str | None = None  # trimmed traceback / compiler message
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    shapes: list[ShapeResult] = field(default_factory=list)
    speedup: float | None = None
    speedup_sum: float | None = None  # GEAK-eval: sum(ref) / sum(candidate)
    speedup_geomean: float | None = None  # geometric mean of per-shape ratios
    speedup_mean_ratio: float | None = None  # arithmetic mean of per-shape ratios (the paper's)
    speedup_method: str = DEFAULT_SPEEDUP_METHOD
    speedup_vs_eager: float | None = None
    roofline_fraction: float | None = None
    performance_measured: bool = False
    performance_note: str = ""
    flags: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    device: str = ""
    mode: str = ""  # "interpreter" | "gpu"
    wall_s: float = 0.0
    # wall seconds by phase: "reference" (0 when cached), "candidate" (run + compare), "timing"
    phases: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["shapes"] = [s.to_dict() for s in self.shapes]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        """A verdict stored without ``speedup_method`` predates the choice: its speedup is
        ``LEGACY_SPEEDUP_METHOD`` (sum)."""
        result = _from_dict(cls, {"speedup_method": LEGACY_SPEEDUP_METHOD, **data})
        result.shapes = [ShapeResult.from_dict(s) for s in data.get("shapes", [])]
        return result


def aggregate_speedups(shapes: list[ShapeResult]) -> tuple[float | None, float | None]:
    """(sum-ratio speedup as GEAK-eval computes it, geometric mean of per-shape ratios), over
    the counted shapes (``ShapeResult.counted``)."""
    timed = [s for s in shapes if s.reference_ms and s.candidate_ms and s.counted]
    if not timed:
        return None, None
    total = sum(s.reference_ms for s in timed) / sum(s.candidate_ms for s in timed)  # type: ignore[misc]
    geo = math.exp(sum(math.log(s.speedup) for s in timed) / len(timed))  # type: ignore[arg-type]
    return total, geo


@dataclass
class Attempt:
    """One round of one lineage: the prompt kind, the candidate and its verdict."""

    task_id: str
    lineage: int
    iteration: int
    kind: str  # generate | reflect | optimize | restart
    candidate_id: str | None
    call_ok: bool = False
    correct: bool = False
    speedup: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TaskSummary:
    task_id: str
    difficulty: int | None = None
    category: str | None = None
    lineages: int = 0
    samples: int = 0
    call_ok: bool = False  # some candidate ran
    correct: bool = False  # some candidate was correct
    correct_lineages: int = 0
    call_lineages: int = 0  # lineages with a candidate that ran
    best_candidate_id: str | None = None
    best_speedup: float | None = None
    # the best correct candidate's speedup under each aggregate (sum, geomean, mean_ratio)
    best_speedups: dict[str, float | None] = field(default_factory=dict)
    best_speedup_vs_eager: float | None = None  # the best candidate's, where the task has a torch equivalent
    # the best candidate's roofline fraction: mean over its timed shapes of max(IOU, MFU)
    best_roofline_fraction: float | None = None
    # the best candidate's code metrics (geak_core.kit.code_metrics): cc_mean, cc_max,
    # maintainability_index, sloc
    best_metrics: dict[str, float | None] = field(default_factory=dict)
    best_file: str | None = None
    skipped_reason: str | None = None
    level: int | None = None  # KernelBench's level (1, 2, 3), where the suite gives one (Task.level)
    has_eager: bool | None = None  # the task has a PyTorch eager equivalent (Task.eager); None: not kept
    # why the best correct candidate has no speedup against PyTorch eager (scaling.eager_gap)
    eager_gap: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSummary:
        return _from_dict(cls, data)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al., 2021): 1 - C(n-c, k) / C(n, k)."""
    if n <= 0 or k <= 0:
        raise ValueError("pass@k needs n > 0 and k > 0")
    if k > n:
        raise ValueError(f"pass@k needs k <= n (k={k}, n={n})")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


@dataclass
class RunSummary:
    run_id: str
    status: str  # finished | budget_exhausted | failed | interrupted
    tasks: list[TaskSummary] = field(default_factory=list)
    call_accuracy: float = 0.0
    execution_accuracy: float = 0.0
    mean_speedup: float | None = None  # under ``speedup_method``, the judge's headline aggregate
    speedup_method: str = DEFAULT_SPEEDUP_METHOD
    # mean over tasks of the best speedup under each aggregate: sum, geomean, mean_ratio
    speedups: dict[str, float | None] = field(default_factory=dict)
    mean_speedup_vs_eager: float | None = None  # mean over tasks of the best candidate's
    # mean over tasks of the best candidate's code metrics: cc_mean, maintainability_index
    code_metrics: dict[str, float | None] = field(default_factory=dict)
    pass_at_k: dict[str, float] = field(default_factory=dict)  # execution: "pass@1" .. "pass@<lineages>"
    call_pass_at_k: dict[str, float] = field(default_factory=dict)  # call accuracy, same keys
    # sequential scaling after i rounds (geak_core.api.scaling.sequential_scaling): {"iteration": i,
    # "call_accuracy", "execution_accuracy", "mean_speedup" (under speedup_method), "speedups" (sum,
    # geomean, mean_ratio), "speedup_tasks" (tasks with a correct timed candidate by then, those
    # the speedup means are over)}
    by_iteration: list[dict[str, Any]] = field(default_factory=list)
    by_difficulty: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per category (geak_core.engine.category_view): tasks, call_accuracy, execution_accuracy,
    # mean_speedup, speedup_tasks, mean_efficiency (max(IOU, MFU)), efficiency_tasks
    by_category: dict[str, dict[str, Any]] = field(default_factory=dict)
    # KernelBench's fast_p against PyTorch eager (geak_core.api.scaling.fast_p), keyed "fast_0",
    # "fast_1", "fast_2": p, n, m, fraction, unmeasured (correct tasks without a speedup against
    # eager, counted as not fast), unmeasured_reasons ({why: how many}); empty in a summary
    # stored before it was kept
    fast_p: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per KernelBench level (geak_core.engine.level_view), where a task has one: tasks,
    # call_accuracy, execution_accuracy, mean_speedup, speedup_tasks, fast_p; empty otherwise
    by_level: dict[str, dict[str, Any]] = field(default_factory=dict)
    llm_calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    note: str = ""
    seed: int | None = None  # the run's [run] seed, from which its LLM request seeds derive
    # The replies were hand-written (the replay backend's scripted mode), not a model's: the
    # figures show the pipeline at work, not what a model can do.
    scripted: bool = False
    # What tuning did, when the recipe's [tuner] tunes (empty otherwise): tuner, when, tuned
    # (candidates whose tuning ran), skipped (candidates not tuned, each with its reason in
    # notes), variants_judged, variants_correct, kept (faster variants kept), notes (each
    # reason or tuner's note, with how many times it was given)
    tuning: dict[str, Any] = field(default_factory=dict)
    # What profiling found, when the recipe's [profiler] profiles (empty otherwise): profiler,
    # when, profiled (candidates with counters), unprofiled (those without, each reason in
    # notes with how often), bounds ({class: candidates}), stopped (lineages stopped at the
    # roofline: task, lineage, reason)
    profiling: dict[str, Any] = field(default_factory=dict)
    # What a conversing generator's model did with its tools (empty otherwise): generator,
    # rounds (conversations held), calls (every call the model made, refused ones too), errors
    # (calls answered with an error: an unknown tool, invalid arguments), refused (not run: the
    # generator's limits), seconds (the tools' time), by_tool ({tool: calls}), drafts (codes
    # judged through a tool) and drafts_correct
    tools: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tasks"] = [t.to_dict() for t in self.tasks]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        """A summary stored without ``speedup_method`` predates the choice: its headline is
        ``LEGACY_SPEEDUP_METHOD`` (sum)."""
        summary = _from_dict(cls, {"speedup_method": LEGACY_SPEEDUP_METHOD, **data})
        summary.tasks = [TaskSummary.from_dict(t) for t in data.get("tasks", [])]
        return summary
