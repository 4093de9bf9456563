"""Check: the device did not sit idle inside the timed spans, waiting for the host.

A timed call the host queued after the device had already passed its start
event (the busy-wait before it was shorter than the host's path to the
launch) is timed with idle device time in it. Such calls are not counted;
when too few others were on time, they are counted after all, and then the
side's latency is not exact (a loaded host, not the candidate's doing).

Detection (child, ``timed_calls.TimedSide.block``): after queuing a call, its
start event already passed (``late_at`` in each ``block``,
:class:`~geak_evaluator_triton.protocol.BlockFrame`); ``timing_loop.time_case``
leaves those out, lengthens the busy-wait when a block has many, and counts
them in after all when a side has too few on time (``late_kept`` per side in
the case's record).

Interpretation (judge, :func:`report`): a side that kept more than one call in
``timing_loop.LATE_SHARE`` late flags the verdict ``late_calls`` (the speedup
stands, marked inexact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from geak_evaluator_triton.timing_loop import LATE_SHARE

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def report(verdict: Verdict, record: dict[str, Any]) -> None:
    """Flag ``late_calls`` when either side of the case's ``record`` kept too many late calls."""
    kept_late = record.get("late_kept") or {}
    if any(int(kept_late.get(side, 0)) * LATE_SHARE > int(record.get("repetitions") or 0)
           for side in ("baseline", "candidate")):
        # More than one kept call in eight queued late: that side's latency includes time
        # the device sat idle waiting for the host (a loaded host); the speedup is not exact.
        verdict.flag("late_calls")
