"""How much of a ROCm reference's speed the grid tuner recovers from its smallest launch configuration.

The target measured: on 12 ROCm tasks (the memory-bound ones and the gemm family),
starting from each task's reference with its configuration replaced by the smallest legal
one, the tuner recovers at least 95 % of the reference's own speed on at least 10, within
2 minutes each.

Per task of the ``rocm`` suite (``--tasks``; the default is ``DEFAULT_TASKS`` below):

1. **Detune** the reference (``detune``, by its AST; every other character stays): each
   ``@triton.autotune`` config list becomes its first config at its smallest, and each
   launch in the module gets its smallest configuration. The ROCm harnesses launch the kernels
   themselves (no reference launches one), with block sizes and ``num_warps`` of their
   own; ``geak_core.api.harness.launch`` leaves out what a candidate's autotune sets, so
   the entry kernel gets one ``@triton.autotune`` with a single ``triton.Config``: the block
   parameters the harness lets a candidate choose (``DEFAULT_TASKS``; elsewhere they are
   the problem's size, or decide a path, and stay the harness's) at ``--min-block`` (16,
   the least ``tl.dot`` takes, used for every block so that one floor holds for all), and
   ``num_warps=1, num_stages=1``. That config is where the grid tuner finds its knobs.
2. **Judge** the detuned candidate (it must be correct; its speedup is the starting speed).
   Where it is wrong by its numbers alone (a stage's comparison: rows reduced in pieces of 16
   round differently), the smallest legal configuration is the smallest the judge finds
   correct: the detuned blocks double until one is (up to 1024; ``detuned_block`` in the
   row, each wrong try in its notes). A start that runs out of the judge's budget (the
   child timed out) is detuned again with twice the warps, up to 8 (``detuned_warps``).
3. **Tune** it as ``geak-core tune --seconds 120`` does (``cli_tune.tune_candidate`` with the
   grid tuner and the same judge; it searches each knob's whole range, coarse to fine):
   ``--passes`` > 1 tunes the kept variant again while the task's seconds and variants last
   (a restart from it; one pass is ``geak-core tune``).
4. **Recovered** = the judge's speedup of the last kept variant (else of the detuned
   candidate) against the reference (the judge's default aggregate, the mean of per-shape
   ratios): 1.0 is the reference's speed.
   The detuned candidate's own speedup is reported beside it; ``--control`` also judges the
   reference as a candidate, to show the timing noise of a ratio of 1.

Results go to ``--json`` as each task ends (rewritten atomically); run again with the same
``--json`` and settings, the finished tasks are kept and the rest run. ``--limit-s N``
starts no task after N seconds. ``--table OUT`` prints the markdown table of a file.

On the GPU (one H100 or H200; a task should take about 2.5 minutes: the detuned candidate
judged, 120 s of tuning, the variants in flight; so the 12 about fill one 30-minute
allowance, in calls of at most 10 minutes: an estimate, not yet measured)::

    python bench/tune_rocm_recovery.py --json runs/rocm-recovery.json --limit-s 360
    python bench/tune_rocm_recovery.py --json runs/rocm-recovery.json --limit-s 360   # again, until done
    python bench/tune_rocm_recovery.py --table runs/rocm-recovery.json

On the CPU (``TRITON_INTERPRET=1``, a smoke test: correctness only, no speed measured, so
nothing is tuned and no fraction is reported)::

    TRITON_INTERPRET=1 python bench/tune_rocm_recovery.py --mode interpreter \\
        --tasks test_add_kernel,softmax --json /tmp/rocm-recovery.json
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tune_results
from tune_results import ResultsFile, SettingsChanged, StartLimit, cell, times

# Task -> the block parameters its harness lets a candidate choose (the grid follows them
# through ``meta``, or the kernel loops over them). An empty tuple: only num_warps and
# num_stages are the candidate's (the blocks are the problem's size, or decide a path).
DEFAULT_TASKS: dict[str, tuple[str, ...]] = {
    # memory-bound
    "test_add_kernel": ("BLOCK_SIZE",),
    "test_block_copy": ("BLOCK_SIZE",),
    "softmax": ("BLOCK_SIZE",),
    "naive_softmax": ("BLOCK_SIZE",),
    "layernorm": ("BLOCK_SIZE",),
    "test_load_reduce": (),  # BLOCK_M x BLOCK_N is the whole matrix
    "rmsnorm_fwd": (),  # the harness derives USE_BLOCKED from its own BLOCK_SIZE
    # the gemm family
    "test_gemm_no_scf": (),  # one tile: the blocks are M, N, K
    "test_block_pointer_matmul": (),  # one tile
    "test_cast_matmul": ("BLOCK_M", "BLOCK_N", "BLOCK_K"),
    "test_gemm_fusion": ("BLOCK_M", "BLOCK_N"),  # BLOCK_K is K
    "test_iv_dependent_matmul": ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"),
}
# Other tasks --tasks may name with what their harness lets a candidate choose; a task in
# neither table is detuned in num_warps and num_stages alone.
OTHER_TASKS: dict[str, tuple[str, ...]] = {
    "test_chained_matmul": ("block_m", "block_n"),  # block_k is k
    "test_batched_vecmat": ("block_m", "block_n", "block_k"),
    "rmsnorm_bwd": (),
    "test_kernel_sub": (),
    "test_kernel_dot": (),
    "test_reverse_range": (),
    "test_triton_flip": (),
}
MIN_BLOCK = 16
TARGET_FRACTION = 0.95
TARGET_COUNT = 10


# -- detuning -----------------------------------------------------------------------------


class DetuneError(Exception):
    """The source cannot be detuned (why is the message)."""


@dataclass
class Detuned:
    """A detuned source and one line per configuration it changed."""

    code: str
    changes: list[str] = field(default_factory=list)


def _smallest(kind: str, value: int, min_block: int, warps: int = 1) -> int:
    if kind == "block":
        return min(value, min_block)
    if kind == "warps":
        return min(value, warps)
    if kind == "stages":
        return 1
    return value  # the AMD-only options are not a size


class _Edits:
    """Edits at ``ast`` positions (UTF-8 byte columns), applied from the last one."""

    def __init__(self, code: str) -> None:
        self.data = code.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.edits: list[tuple[int, int, str]] = []

    def _span(self, node: ast.AST) -> tuple[int, int]:
        return (self.starts[node.lineno - 1] + node.col_offset,
                self.starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0))

    def segment(self, node: ast.AST) -> str:
        start, end = self._span(node)
        return self.data[start:end].decode("utf-8")

    def replace(self, node: ast.AST, text: str) -> None:
        self.edits.append((*self._span(node), text))

    def insert_line(self, line: int, text: str) -> None:
        self.edits.append((self.starts[line - 1], self.starts[line - 1], text))

    def result(self) -> str:
        data = self.data
        for start, end, text in sorted(self.edits, reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        return data.decode("utf-8")


def _named(node: ast.AST, *names: str) -> bool:
    from geak_core.api.astutil import dotted_name

    target = node.func if isinstance(node, ast.Call) else node
    return dotted_name(target) in names


def _jit_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
            and any(_named(d, "triton.jit", "jit") for d in n.decorator_list)]


def _config_list(tree: ast.Module, decorator: ast.AST) -> ast.List | None:
    """The list of an ``@triton.autotune``: written in it, or a module-level list it names."""
    if not isinstance(decorator, ast.Call):
        return None
    value = next((k.value for k in decorator.keywords if k.arg == "configs"),
                 decorator.args[0] if decorator.args else None)
    if isinstance(value, ast.Name):
        value = next((n.value for n in tree.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)), None)
    return value if isinstance(value, ast.List) else None


def _signature(tree: ast.Module, names: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """Each named kernel's parameters and their annotations, as written."""
    wanted = set(names)
    return {fn.name: [(a.arg, ast.unparse(a.annotation) if a.annotation else "")
                      for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
            for fn in _jit_kernels(tree) if fn.name in wanted}


def detune(code: str, kernels: Iterable[str], blocks: Iterable[str], min_block: int = MIN_BLOCK,
           warps: int = 1) -> Detuned:
    """``code`` with its launch configuration replaced by the smallest legal one.

    The knobs are those the grid tuner finds (``geak_tuner_grid.knobs.find_knobs``), and
    literals are rewritten as its variants are (``geak_tuner_grid.variants.rewrite``):

    * each launch in the module (``kernel[grid](..., BLOCK=128, num_warps=8)``) gets block
      literals of at most ``min_block`` (a grid literal tied to one is rewritten with it)
      and one warp and stage;
    * each ``@triton.autotune`` list (in the decorator, or a module-level list it names)
      becomes its first config, so set, with ``num_warps=1, num_stages=1`` added where it
      has none;
    * each of ``kernels`` (the task's entry kernels) that the module neither launches nor
      autotunes is launched by the harness: it gets ``@triton.autotune`` with one config,
      ``blocks`` (those of its parameters) at ``min_block``, one warp and one stage, which
      the harness's ``launch`` gives precedence over its own arguments.

    Refused (``DetuneError``): a source that autotunes by a call rather than a decorator (its
    configs built at run time), and a result in which the grid tuner finds no knob or whose
    entry kernels' signatures changed. ``warps`` > 1: that many warps wherever one is said
    above (``run_task``'s start when one warp does not finish within the judge's budget)."""
    from geak_core.api.astutil import dotted_name, parse_source
    from geak_tuner_grid.knobs import find_knobs
    from geak_tuner_grid.variants import rewrite

    kernels, blocks = list(kernels), list(blocks)
    tree = parse_source(code)
    before = _signature(tree, kernels)
    decorators = {id(d) for fn in _jit_kernels(tree) for d in fn.decorator_list}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in decorators and dotted_name(node.func).endswith("autotune"):
            raise DetuneError(f"line {node.lineno}: autotune applied by a call, its configs built at run time")
    launched = {dotted_name(n.func.value).split(".")[-1] for n in ast.walk(tree)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)}

    smallest = [(k, _smallest(k.kind, k.value, min_block, warps)) for k in find_knobs(code)
                if k.site == "launch" or k.config == 0]
    smallest = [(k, v) for k, v in smallest if v != k.value]
    code = rewrite(code, smallest)
    changes = [f"{k.kernel}.{k.name} {k.value}->{v} ({'launch' if k.site == 'launch' else 'first config'})"
               for k, v in smallest]

    tree = parse_source(code)
    edits = _Edits(code)
    imported = any(isinstance(n, ast.Import) and any(a.name == "triton" and a.asname is None for a in n.names)
                   for n in tree.body)
    for fn in _jit_kernels(tree):
        autotunes = [d for d in fn.decorator_list if _named(d, "triton.autotune", "autotune")]
        for decorator in autotunes:
            configs = _config_list(tree, decorator)
            first = configs.elts[0] if configs is not None and configs.elts else None
            if not isinstance(first, ast.Call):
                raise DetuneError(f"{fn.name}: its autotune configs are not a list of triton.Config")
            text = edits.segment(first)
            given = {k.arg for k in first.keywords}
            added = [f"{name}={value}" for name, value in (("num_warps", warps), ("num_stages", 1))
                     if name not in given]
            if added:
                text = text[: text.rindex(")")].rstrip().rstrip(",") + ", " + ", ".join(added) + ")"
            edits.replace(configs, f"[{text}]")  # type: ignore[arg-type]
            changes.append(f"{fn.name}: autotune's {len(configs.elts)} configs -> {text}")  # type: ignore[union-attr]
        if autotunes or fn.name not in kernels or fn.name in launched:
            continue
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args)}
        chosen = [b for b in blocks if b in params]
        config = (f"triton.Config({{{', '.join(f'{b!r}: {min_block}' for b in chosen)}}}, "
                  f"num_warps={warps}, num_stages=1)")
        text = f"{' ' * fn.col_offset}@triton.autotune(configs=[{config}], key=[])\n"
        if not imported and fn.col_offset == 0:
            text = "import triton\n\n\n" + text
            imported = True
        edits.insert_line(min(d.lineno for d in fn.decorator_list), text)
        changes.append(f"{fn.name}: launched by the harness; @triton.autotune added with {config}")
    detuned = edits.result()

    if _signature(parse_source(detuned), kernels) != before:
        raise DetuneError("the entry kernels' signatures changed")
    if not [k for k in find_knobs(detuned) if not k.hip_only]:
        raise DetuneError("the grid tuner finds no knob in the detuned source")
    return Detuned(detuned, changes)


# -- one task ------------------------------------------------------------------------------


def blocks_of(task_id: str) -> tuple[str, ...]:
    return {**OTHER_TASKS, **DEFAULT_TASKS}.get(task_id, ())


# The stages where a detuned variant can fail by its numbers alone (its reduction order);
# failing to compile or run at the smallest blocks is reported as it is.
NUMERIC_STAGES = ("stage1", "stage2")
MAX_DETUNED_BLOCK = 1024
# A start that does not finish within the judge's budget (one warp for rmsnorm_fwd's blocks of
# 32,768 elements: its child ran out of 165 s in stage 1 on an H200) is no start either: the
# warps double until the judge decides the candidate (at most MAX_DETUNED_WARPS).
MAX_DETUNED_WARPS = 8


def _verdict(result: Any) -> dict[str, Any]:
    return {"correct": bool(result.call_ok and result.correct), "failed_stage": result.failed_stage,
            "reason": result.reason, "speedup": result.speedup,
            "performance_measured": result.performance_measured, "performance_note": result.performance_note,
            "flags": list(result.flags), "mode": result.mode}


def run_task(task: Any, judge: Any, tuner: Any, args: argparse.Namespace, env: dict[str, Any]) -> dict[str, Any]:
    """One task's row: detune, judge, tune (``--passes``), recovered fraction."""
    from geak_core.api.components import TuneBudget
    from geak_core.api.model import Candidate
    from geak_core.cli.cli_tune import tune_candidate
    from geak_tuner_grid.diff import variant_diff

    blocks = blocks_of(task.id)
    row: dict[str, Any] = {"task": task.id, "blocks_detuned": list(blocks), "detune": [], "detuned": None,
                           "control": None, "passes": [], "detuned_speedup": None,
                           "recovered": None, "reached": None, "variants_judged": 0, "variants_correct": 0,
                           "changes": [], "diff": "", "tuned_code": None, "notes": [], "seconds": 0.0}
    reference = Path(task.reference).read_text(encoding="utf-8")
    kernels = [e.name for e in task.entry_points if e.kind == "triton.jit"]
    block, warps = args.min_block, 1
    while True:
        try:
            detuned = detune(reference, kernels, blocks, block, warps)
        except (DetuneError, SyntaxError) as exc:
            row.update(status="not detunable", notes=row["notes"] + [str(exc)])
            return row
        row["detune"], row["detuned_code"], row["detuned_block"] = detuned.changes, detuned.code, block
        row["detuned_warps"] = warps
        candidate = Candidate(id=f"detuned:{task.id}", task_id=task.id, code=detuned.code, origin="file")
        untuned = tune_results.judge_once(judge, task, candidate)
        tune_results.note_device(env, untuned)
        row["detuned"], row["device"] = _verdict(untuned), untuned.device
        if "judge_error" in untuned.flags:
            row.update(status="judge error", notes=row["notes"] + [untuned.reason or ""])
            return row
        if untuned.call_ok and untuned.correct:
            break
        why = f"blocks of {block}, {warps} warp(s): {untuned.failed_stage}: {untuned.reason}"
        if "timed out" in (untuned.reason or "") and warps * 2 <= MAX_DETUNED_WARPS:
            row["notes"].append(why + f"; detuned again with {warps * 2} warps")
            warps *= 2
            continue
        # The smallest legal configuration is the smallest the judge finds correct: a block
        # that changes the summation order past the tolerance (softmax's rows in pieces of
        # 16) is not a start, so the blocks double until one is (at most MAX_DETUNED_BLOCK).
        if not blocks or untuned.failed_stage not in NUMERIC_STAGES or block * 2 > MAX_DETUNED_BLOCK:
            row.update(status="detuned not correct", notes=row["notes"] + [why])
            return row
        row["notes"].append(why + f"; detuned again with blocks of {block * 2}")
        block *= 2
    row["detuned_speedup"] = untuned.speedup if untuned.performance_measured else None
    if args.control:
        control = Candidate(id=f"reference:{task.id}", task_id=task.id, code=reference, origin="file")
        row["control"] = _verdict(tune_results.judge_once(judge, task, control))

    seconds_left, variants_left = args.seconds, args.variants
    current, current_result = candidate, untuned
    for _ in range(args.passes):
        budget = TuneBudget(candidates=variants_left, seconds=seconds_left)
        record, kept = tune_candidate(task, current, current_result, tuner, judge, budget)
        record.pop("tuned_code")
        row["passes"].append(record)
        row["notes"] += record["notes"]
        row["variants_judged"] += record["variants_judged"]
        row["variants_correct"] += record["variants_correct"]
        row["changes"] += record["changes"]
        seconds_left -= record["seconds"]
        variants_left -= record["variants_judged"]
        if kept is None:
            break
        current, current_result = kept.candidate, kept.result
        if seconds_left <= 0 or variants_left <= 0:
            break
    row["seconds"] = round(args.seconds - seconds_left, 1)
    if not untuned.performance_measured:
        row["status"] = "not timed"
        return row
    row["recovered"] = current_result.speedup
    row["reached"] = current_result.speedup is not None and current_result.speedup >= TARGET_FRACTION
    if current is not candidate:
        row["diff"] = variant_diff(detuned.code, current.code)
        row["tuned_code"] = current.code
    row["status"] = "done"
    return row


# -- figures -------------------------------------------------------------------------------


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r for r in rows if r["status"] == "done"]
    return {
        "tasks": len(rows),
        "detuned_correct": sum(r["detuned"] is not None and r["detuned"]["correct"] for r in rows),
        "measured": len(measured),
        "reached": sorted(r["task"] for r in measured if r["reached"]),
        "not_reached": sorted(r["task"] for r in measured if not r["reached"]),
        "not_measured": {r["task"]: r["status"] for r in rows if r["status"] != "done"},
        "recovered_geomean": tune_results.geometric_mean(r["recovered"] for r in measured),
        "detuned_geomean": tune_results.geometric_mean(r["detuned_speedup"] for r in measured),
        "variants_judged": sum(r["variants_judged"] for r in rows),
        "target": f"recovered >= {TARGET_FRACTION} on at least {TARGET_COUNT} of the {len(DEFAULT_TASKS)} "
                  "default tasks",
        "target_met": (len([r for r in measured if r["reached"]]) >= TARGET_COUNT
                       if measured and {r["task"] for r in measured} >= set(DEFAULT_TASKS) else None),
    }


def markdown(data: dict[str, Any]) -> str:
    env, settings, summary = data["environment"], data["settings"], data["summary"]
    lines = [
        f"ROCm references detuned, then tuned by `{settings.get('tuner', 'grid')}` "
        f"({settings.get('seconds', '?')} s, {settings.get('variants', '?')} variants, "
        f"{settings.get('passes', '?')} pass(es) a task) on "
        f"{tune_results.device_text(env)}",
        "",
        "| task | blocks detuned | detuned | tuned (recovered) | >= 95 % | variants judged (correct) | "
        "knobs changed | control | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        control = row.get("control") or {}
        reached = {True: "yes", False: "NO", None: "-"}[row["reached"]]
        detuned = "-" if not row["detune"] else ", ".join(row["blocks_detuned"]) or "warps, stages"
        if row["detune"] and row["blocks_detuned"] and row.get("detuned_block", settings.get("min_block")) != \
                settings.get("min_block"):
            detuned += f" (at {row['detuned_block']}: smaller was wrong)"
        if row.get("detuned_warps", 1) > 1:
            detuned += f" (at {row['detuned_warps']} warps: fewer ran out of time)"
        lines.append(
            f"| {row['task']} | {detuned} | "
            f"{times(row['detuned_speedup'])} | {times(row['recovered'])} | {reached} | "
            f"{row['variants_judged']} ({row['variants_correct']}) | {cell(', '.join(row['changes']), 70)} | "
            f"{times(control.get('speedup'))} | {row['status']} |")
    lines.append("")
    if summary["measured"]:
        lines.append(f"{len(summary['reached'])} of {summary['measured']} measured tasks recovered at least "
                     f"{TARGET_FRACTION:.0%} of the reference's speed (target: {summary['target']}"
                     f"{'' if summary['target_met'] is None else '; met' if summary['target_met'] else '; NOT met'}); "
                     f"geometric mean recovered {times(summary['recovered_geomean'])}, detuned "
                     f"{times(summary['detuned_geomean'])}.")
    else:
        lines.append("No speed was measured (the interpreter checks correctness only, on the CPU): nothing was "
                     "tuned, and there is no recovered fraction to report.")
    lines.append("detuned, tuned: the judge's speedup against the reference (mean of per-shape ratios); "
                 "tuned = the fraction of the reference's speed recovered. control: the reference judged "
                 "against itself (--control).")
    return "\n".join(lines)


# -- command -------------------------------------------------------------------------------


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="", metavar="OUT",
                        help="print the table of an earlier --json file (several, comma-separated: one "
                             "table of their rows)")
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated task ids")
    parser.add_argument("--json", dest="json_out", default="", help="results, rewritten after every task")
    parser.add_argument("--seconds", type=float, default=120.0, help="seconds of tuning per task")
    parser.add_argument("--variants", type=int, default=64,
                        help="variants judged per task at most (large enough that --seconds binds)")
    parser.add_argument("--passes", type=int, default=1,
                        help="tunings per task: each after the first starts from the variant kept by the one "
                             "before, with the seconds and variants left (1: geak-core tune's single pass)")
    parser.add_argument("--min-block", type=int, default=MIN_BLOCK, help="the detuned block size")
    parser.add_argument("--control", action="store_true", help="also judge each reference against itself")
    parser.add_argument("--limit-s", type=float, default=0.0, help="start no task after this many seconds")
    parser.add_argument("--mode", default="auto", choices=["auto", "interpreter", "gpu"])
    parser.add_argument("--workers", type=int, default=0, help="GPUs, or CPU workers (0: the judge's default)")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per judge child (0: the judge's)")
    parser.add_argument("--hardware", default="", help="hardware profile (default: detect)")
    parser.add_argument("--evaluator", default="triton", help="registered evaluator (the judge)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from geak_core.api.errors import GeakError
    from geak_core.cli.cli_eval import build_judge
    from geak_core.cli.cli_tune import build_tuner
    from geak_core.engine.plugins import get_plugin_manager

    args = _parse(argv)
    if args.table:
        print(markdown(tune_results.read_merged(args.table, summarize)))
        return 0
    settings = {"suite": "rocm", "tuner": "grid", "seconds": args.seconds, "variants": args.variants,
                "passes": args.passes, "min_block": args.min_block, "speedup_method": "mean_ratio"}
    try:
        results = ResultsFile(args.json_out, settings, "task", summarize)
        manager = get_plugin_manager()
        spec = manager.spec("suite", "rocm")
        suite = manager.build("suite", "rocm", spec.options() if spec.options is not None else None)
        tasks = [suite.get(t.strip()) for t in args.tasks.split(",") if t.strip()]
        tuner = build_tuner("grid", (), args.hardware or None)
        judge = build_judge(args.evaluator, "local", (), args.mode, args.workers or None, args.timeout or None,
                            args.hardware or None, None, "mean_ratio", ())
    except (GeakError, SettingsChanged, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results.environment = {**results.environment, **tune_results.environment(args.mode)}
    results.write()
    limit = StartLimit(args.limit_s)
    not_run = []
    try:
        for task in tasks:
            if results.done(task.id):
                print(f"{task.id}: kept from {args.json_out}", file=sys.stderr)
                continue
            if not limit.may_start():
                not_run.append(task.id)
                continue
            row = run_task(task, judge, tuner, args, results.environment)
            results.environment["last_run_s"] = round(limit.elapsed(), 1)
            results.put(row)
            print(f"{task.id}: {row['status']}, detuned {times(row['detuned_speedup'])}, recovered "
                  f"{times(row['recovered'])} ({row['variants_judged']} variants, {row['seconds']:.0f} s)"
                  + (f"; {row['notes'][0]}" if row["notes"] else ""), file=sys.stderr, flush=True)
    finally:
        judge.close()
        results.environment["last_run_s"] = round(limit.elapsed(), 1)
        results.write()
    if not_run:
        print(f"not started (--limit-s {args.limit_s:g}): {', '.join(not_run)}; run again with the same --json",
              file=sys.stderr)
    print(markdown(results.data()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
