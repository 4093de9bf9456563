"""Timing, judge side: what the candidate's child is asked to time, and what its figures mean.

The measurement itself runs in the candidate's child (``gputiming``) while the
judge holds the device exclusively. Here the judge asks for it (cases, the
baseline's seed, the loop's settings) and turns the ``timing`` frames into
per-case latencies, speedups and roofline figures, after checking that the
timed calls still produced the reference's outputs for the secret timing seed.
"""

from __future__ import annotations

from typing import Any

from geak_core.components import HardwareProfile
from geak_core.model import EvalResult, ShapeResult, aggregate_speedups
from geak_core.scaling import speedup_mean_ratio
from geak_core.tasks import Task

from geak_evaluator_triton.comparison import compare_outputs, custom_compare, overrides_for, tail
from geak_evaluator_triton.options import TritonEvaluatorOptions
from geak_evaluator_triton.performance import shape_result
from geak_evaluator_triton.protocol import TimingOptions
from geak_evaluator_triton.references import ReferenceRun
from geak_evaluator_triton.verdict import Verdict, trim_traceback

MIB = 1024 * 1024
NO_PROFILE_FLUSH_MIB = 256  # enough for any current GPU's caches, when the profile is unknown
MIN_FLUSH_MIB = 32


def flush_bytes(options: TritonEvaluatorOptions, profile: HardwareProfile | None) -> int:
    """The cache-flush buffer written before each timed call: ``flush_mib`` when set, else
    twice the profile's L2 and last-level caches (at least MIN_FLUSH_MIB), else 256 MiB.

    Writing twice a cache's size evicts everything it held; every MiB more is device time
    spent in each timed call (at an H100's peak 3.35 TB/s, 256 MiB take at least 80 us, twice
    its 50 MiB L2 at least 31 us).
    """
    if options.flush_mib > 0:
        return int(options.flush_mib * MIB)
    if profile is None:
        return NO_PROFILE_FLUSH_MIB * MIB
    cache_mib = profile.l2_cache_mib + profile.last_level_cache_mib
    return int(max(MIN_FLUSH_MIB, 2 * cache_mib) * MIB)


def timing_request(ref: ReferenceRun, options: TritonEvaluatorOptions, profile: HardwareProfile | None,
                   candidate_cache: str) -> dict[str, Any]:
    flush = flush_bytes(options, profile)
    loop: TimingOptions = {
        "warmup_ms": options.warmup_ms,
        "rep_ms": options.rep_ms,
        "repetitions": options.repetitions,
        "min_repetitions": options.min_repetitions,
        "max_repetitions": options.max_repetitions,
        "target_ci": options.target_ci,
        "weighting": "sum" if options.speedup_method == "sum" else "equal",
        "l2_flush": options.l2_flush,
        "queue_ahead_us": options.queue_ahead_us,
        "flush_bytes": flush,
    }
    return {
        "cases": [c.name for c in ref.timed],
        "reference_seed": ref.seeds[0],
        "options": loop,
        "candidate_cache": candidate_cache,
    }


def apply_timing(task: Task, ref: ReferenceRun, timings: list[dict[str, Any]], errors: Verdict,
                 completed: bool, stderr: str, profile: HardwareProfile | None,
                 options: TritonEvaluatorOptions, result: EvalResult, run_child: Any) -> None:
    """Fill ``result``'s performance fields from the child's timing frames."""
    cases = {c.name: c for c in ref.cases}
    verdict = Verdict()
    for failure in errors.failures:
        verdict.fail(failure.stage, failure.reason, failure.error)
    shapes: list[ShapeResult] = []
    timed_runs: list[dict[str, Any]] = []
    for frame in timings:
        case = cases[frame["case"]]
        for problem in frame.get("violations", []):
            verdict.fail("anticheat", f"while being timed on case {case.name!r}, the candidate "
                         f"{problem}", key=f"violation:{problem}")
        if frame.get("zero_launch_calls"):
            verdict.fail("anticheat", f"{frame['zero_launch_calls']} timed call(s) of case "
                         f"{case.name!r} launched none of the candidate's kernels", key="no_launch")
        shapes.append(shape_result(case, frame, profile, verdict))
        if frame.get("has_outputs"):
            timed_runs.append({"stage": "timing", "case": case.name, "seed": frame["seed"],
                               "outputs": frame.get("outputs")})
    # The outputs of the last timed call must still be right (timing seed, checked here).
    custom = custom_compare(task, ref, timed_runs, cases, run_child) if ref.custom_compare else {}
    unverified: list[str] = []
    for index, run in enumerate(timed_runs):
        case = cases[run["case"]]
        expected = ref.outputs.get(("timing", case.name, run["seed"]))
        diffs = compare_outputs(expected, run["outputs"], overrides_for(task, case), custom.get(index))
        if not diffs:
            continue
        if case.checked:
            verdict.fail("anticheat", f"the outputs of the timed runs of case {case.name!r} differ "
                         f"from the reference: {diffs[0]['message']}", mismatches=diffs, key="timed_outputs")
        else:  # a timing-only case: the task does not judge these outputs, but no speed from them
            unverified.append(f"{case.name}: {diffs[0]['message']}")
    if not verdict.failures and (not completed or len(shapes) < len(ref.timed)):
        verdict.fail("timing", f"the timing of {len(shapes)} of {len(ref.timed)} cases finished",
                     tail(stderr, 4000))
    elif not verdict.failures and len(timed_runs) < len(shapes):
        verdict.fail("timing", f"the timed outputs of {len(shapes) - len(timed_runs)} of {len(shapes)} "
                     "cases did not arrive", tail(stderr, 4000))
    for flag in verdict.flags:
        if flag not in result.flags:
            result.flags.append(flag)
    first = verdict.first
    if first is None and unverified:
        result.flags.append("timed_outputs_differ")
        result.performance_measured = False
        result.performance_note = ("not measured: the timed outputs of timing-only cases differ from the "
                                   "reference's: " + "; ".join(unverified[:3]))
        result.shapes = shapes
        return
    if first is not None:
        if first.stage == "anticheat":
            result.correct = False
        result.failed_stage = first.stage
        result.reason = verdict.reason()
        result.error = trim_traceback(first.error)
        result.mismatches = first.mismatches
        result.performance_measured = False
        result.performance_note = f"not measured: {first.reason}"
        result.shapes = shapes
        return
    for part in ("warmup", "loop", "cross_check"):  # where the timing phase went, over all cases
        result.phases[f"timing.{part}"] = round(sum(float((f.get("wall_s") or {}).get(part, 0.0))
                                                    for f in timings), 3)
    result.shapes = shapes
    result.performance_measured = True
    result.speedup_sum, result.speedup_geomean = aggregate_speedups(shapes)
    result.speedup_mean_ratio = speedup_mean_ratio(shapes)
    result.speedup = {"sum": result.speedup_sum, "geomean": result.speedup_geomean,
                      "mean_ratio": result.speedup_mean_ratio}[options.speedup_method]
    fractions = [s.roofline_fraction for s in shapes if s.roofline_fraction is not None]
    result.roofline_fraction = sum(fractions) / len(fractions) if fractions else None
    baseline = "the task's timing baseline" if task.timing_baseline else "reference"
    note = f"CUDA-event medians, {baseline} and candidate interleaved"
    if ref.untimed:
        note += "; not timed: " + "; ".join(f"{k} ({v})" for k, v in list(ref.untimed.items())[:3])
    if profile is None:
        note += "; no hardware profile matched the device, so no roofline figures"
    result.performance_note = note
    if result.speedup is not None and result.speedup > options.suspicious_speedup:
        result.flags.append("suspicious_speedup")
