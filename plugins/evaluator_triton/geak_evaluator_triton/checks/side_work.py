"""Check: no work hidden from the timer on another stream.

Detection (child, ``timed_calls.TimedSide.block``): every block of timed calls
ends with a device-wide synchronisation; its *gap* per call is the host clock
around the block minus the device span its events saw, divided by its calls.
Launch and return overheads are in both sides' gaps alike; work left running
on another stream past the block's last event (which the synchronisation
waits for) is in the candidate's only. (Work left on another stream that its
outputs depend on is caught earlier: the outputs are not ready when the checks
queued behind the call read them, ``checks.timed_outputs``.)

Interpretation (judge, here): a candidate whose median gap exceeds the
baseline's by more than ``max(MIN_EXCESS_MS, SHARE × its latency)`` is flagged
``timing_mismatch`` and charged the excess on top of its latency (:func:`report`),
once the finding has reproduced: a case where it is found (:func:`found`) is
timed once more and read off the second timing (``timing_session.run_session``),
so that a moment of the host or the device that is none of the candidate's
doing is not charged to it, while work it hides on every call shows both times.
The gaps travel in each ``block`` (``gaps``,
:class:`~geak_evaluator_triton.protocol.BlockFrame`); ``timing_loop.time_case``
keeps their medians in the case's record (``reference_gap_ms``, ``candidate_gap_ms``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict

MIN_EXCESS_MS = 0.05
SHARE = 0.5


def charged_latency(record: dict[str, Any]) -> tuple[float, bool]:
    """(the candidate's latency to use, whether hidden work was found)."""
    latency = float(record["candidate_ms"])
    excess = float(record.get("candidate_gap_ms", 0.0)) - max(0.0, float(record.get("reference_gap_ms", 0.0)))
    if excess > max(MIN_EXCESS_MS, SHARE * latency):
        return latency + excess, True
    return latency, False


def found(record: dict[str, Any]) -> bool:
    """Whether the case's record shows hidden work (to be confirmed by timing it again)."""
    return charged_latency(record)[1]


def report(verdict: Verdict, record: dict[str, Any]) -> float:
    """The candidate's latency to use for the case's ``record``; flags ``timing_mismatch``
    when hidden work was found."""
    latency, hidden = charged_latency(record)
    if hidden:
        verdict.flag("timing_mismatch")
    return latency
