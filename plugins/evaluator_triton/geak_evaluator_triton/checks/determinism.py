"""Check: the candidate gives the same results twice on the same inputs.

Results that change from call to call (a race, state kept between calls, an
answer that depends on what ran before) would make a correct-looking run an
accident.

Detection: the child runs each checked case's first stage-1 seed twice
(``child_jobs.run_plan``, unless the plan leaves the case out as heavy; the
``run`` frame's ``rerun`` holds the second outputs), and the judge compares the
two under the task's tolerances and bitwise (``run_compare.compare_frame``:
``rerun_diffs``, ``rerun_bitwise`` in the run's findings).

Interpretation (judge, :func:`report`): a difference beyond the tolerances
rejects the candidate (stage ``anticheat``, reported once); a difference
within them flags the verdict ``nondeterministic_within_tolerance``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def report(verdict: Verdict, at: str, found: dict[str, Any]) -> None:
    """Judge the rerun of the run ``at`` from its comparison's findings ``found``."""
    diffs = found.get("rerun_diffs")
    if diffs:
        verdict.fail("anticheat", f"{at}: results differ between two runs on the same "
                     f"inputs: {diffs[0]['message']}", mismatches=diffs, key="nondeterministic")
    elif diffs is not None and not found.get("rerun_bitwise"):
        verdict.flag("nondeterministic_within_tolerance")
