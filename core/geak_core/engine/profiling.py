"""Profile one correct candidate and read its bottleneck: the one path the agent's loop and
``geak-core profile`` both take.

The judge runs the profile (``EvaluatorBase.profile``: the candidate's own code on one case,
under the profiler's tool, in the judge's sandbox, wherever the executor put the judge); the
diagnosis is read here from the kernels' counters together with what the verdict measured of
that case (its FLOPs and bytes, the candidate's latency) and the hardware profile's peaks
(``geak_core.api.profiling.diagnose``). Neither changes the verdict.

* ``profile_candidate``: that profile, its failure turned into a record with ``error`` (a
  profile never stops a run), with the diagnosis;
* ``unprofiled_reason``: a profile explains a measured latency, so a candidate the judge did
  not time (the Triton interpreter on a CPU checks correctness only) is not profiled, and
  the reason is said, never silent;
* ``roofline_stop``: why a lineage whose candidate runs at its bound's peak stops optimizing;
* ``first_usable_profiler``: what a command takes when told no profiler.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

from geak_core.api.components import EvaluatorBase, HardwareProfile, ProfilerBase
from geak_core.api.errors import InputError
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import COMPUTE, MEMORY, ProfileRecord, bound_line, diagnose
from geak_core.api.tasks import Task
from geak_core.engine.plugins import PluginManager

# The profilers a command takes when it is told none, in this order: the first one that is
# installed (registered) and usable on this machine.
PREFERRED_PROFILERS = ("ncu", "proton", "rocprof")


def profile_candidate(judge: EvaluatorBase, task: Task, candidate: Candidate, result: EvalResult, profiler: ProfilerBase,
                      seconds: float, hardware: HardwareProfile | None, *, case: str = "",
                      calls: int = 1) -> ProfileRecord:
    """``candidate``'s profile by ``judge`` under ``profiler`` within ``seconds`` (``case``:
    the case to profile, else the judge's choice, its largest timed case; ``calls``: calls
    profiled), with its diagnosis. ``result`` is the candidate's verdict: only a correct
    candidate is profiled (a wrong one's record says why not), and its figures for the
    profiled case (``ShapeResult``: FLOPs, bytes, the candidate's latency) feed the diagnosis
    with ``hardware``'s peaks. Failures are the record's ``error``, never raised."""
    name = profiler.profiler_name
    if not result.correct:
        why = (result.reason or "").splitlines()[0] if result.reason else "it is not correct"
        return ProfileRecord(name, candidate.id, case=case, calls=calls,
                             error=f"only a correct candidate is profiled: {why}")
    started = time.monotonic()
    try:
        record = judge.profile(task, candidate, profiler, seconds, case=case, calls=calls)
    except Exception as exc:  # the judge's or the tool's fault: said, and the run goes on
        return ProfileRecord(name, candidate.id, case=case, calls=calls, seconds=time.monotonic() - started,
                             error=f"profiling failed: {type(exc).__name__}: {exc}")
    record = dataclasses.replace(record, profiler=record.profiler or name,
                                 candidate_id=record.candidate_id or candidate.id)
    if not record.ok:
        return record
    shape = next((s for s in result.shapes if s.case == record.case), None)
    latency_us = shape.candidate_ms * 1e3 if shape is not None and shape.candidate_ms else None
    return record.with_diagnosis(diagnose(record.kernels, calls=record.calls, hardware=hardware, case=shape,
                                          latency_us=latency_us))


def first_usable_profiler(plugins: PluginManager, names: Iterable[str] = PREFERRED_PROFILERS) -> ProfilerBase:
    """The first of ``names`` that is registered and usable here (its ``unusable()`` empty),
    built with its default options; raises ``InputError`` saying why each is not."""
    names = tuple(names)
    registered = plugins.components("profiler")
    reasons = []
    for name in names:
        if name not in registered:
            reasons.append(f"{name}: not installed")
            continue
        try:
            profiler = registered[name].build()
        except Exception as exc:
            reasons.append(f"{name}: {exc}")
            continue
        problems = list(profiler.unusable())
        if not problems:
            return profiler
        reasons.append(f"{name}: {'; '.join(problems)}")
    raise InputError(f"no profiler is usable here ({'; '.join(reasons)}): install one of {', '.join(names)}, "
                     "or name a registered one with --profiler")


def unprofiled_reason(result: EvalResult) -> str | None:
    """Why the candidate judged ``result`` is not profiled (None: it is). Only a correct
    candidate is ever profiled."""
    if not (result.call_ok and result.correct):
        return "not profiled: the candidate is not correct"
    if result.performance_measured and any(s.candidate_ms for s in result.shapes):
        return None
    why = result.performance_note or "the judge timed nothing"
    why = why[len("not measured: "):] if why.startswith("not measured: ") else why
    return f"profile skipped: speed not measured, so there is no latency to explain ({why})"


def roofline_stop(record: ProfileRecord, threshold: float) -> str | None:
    """Why the lineage of the candidate profiled in ``record`` stops optimizing: it is memory-
    or compute-bound at ``threshold`` of that bound's peak or more (``[profiler]
    stop_at_peak_fraction``; 0 never stops). None: it goes on."""
    diagnosis = record.diagnosis
    if threshold <= 0 or diagnosis is None or diagnosis.bound not in (MEMORY, COMPUTE):
        return None
    if diagnosis.peak_fraction is None or diagnosis.peak_fraction < threshold:
        return None
    return (f"at the roofline: {record.candidate_id} is {bound_line(diagnosis)} ([profiler] "
            f"stop_at_peak_fraction = {threshold:g})")
