"""The engine's side of the ``[profiler]``: one correct candidate profiled by the run's judge.

* ``profile_candidate``: the judge's ``profile()`` of a candidate, its failure turned into a
  record with ``error`` (a profile never stops a run), and the diagnosis read from the
  counters against the hardware profile and the judge's own figures for the profiled case.
* ``unprofiled_reason``: a profile explains a measured latency, so a candidate the judge did
  not time (the Triton interpreter on a CPU checks correctness only) is not profiled, and
  the reason is said, never silent.
* ``roofline_stop``: why a lineage whose candidate runs at its bound's peak stops optimizing.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from geak_core.api.components import HardwareProfile
from geak_core.api.model import Candidate, EvalResult
from geak_core.api.profiling import COMPUTE, MEMORY, ProfileRecord, bound_line, diagnose
from geak_core.api.tasks import Task


def profile_candidate(judge: Any, task: Task, candidate: Candidate, result: EvalResult, profiler: Any,
                      seconds: float, hardware: HardwareProfile | None) -> ProfileRecord:
    """``candidate`` (judged ``result``) profiled by ``judge`` under ``profiler`` within
    ``seconds``, with its diagnosis; whatever goes wrong is the record's ``error``."""
    started = time.monotonic()
    try:
        record = judge.profile(task, candidate, profiler, seconds)
    except Exception as exc:  # the judge's or the tool's fault: said, and the run goes on
        return ProfileRecord(profiler.profiler_name, candidate.id, seconds=time.monotonic() - started,
                             error=f"profiling failed: {type(exc).__name__}: {exc}")
    record = dataclasses.replace(record, profiler=record.profiler or profiler.profiler_name,
                                 candidate_id=record.candidate_id or candidate.id)
    if not record.ok:
        return record
    case = next((s for s in result.shapes if s.case == record.case), None)
    latency_us = case.candidate_ms * 1000.0 if case is not None and case.candidate_ms else None
    return record.with_diagnosis(diagnose(record.kernels, calls=record.calls, hardware=hardware, case=case,
                                          latency_us=latency_us))


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
