"""Check: the candidate's own kernels do the work, in every run and every timed call.

A wrapper entry point that launches the reference's kernel (or any other
file's), or that launches nothing at all, has not computed with the
candidate's kernels; neither has a timed call that launched none of them (an
empty launch while timed, the work done elsewhere).

Detection (child): the launch log (``guards.LaunchLog``) records every Triton
launch with the kernel's defining file and whether an entry point made it;
:func:`classify` sorts a run's launches into the candidate's, the harness's
own and other files' kernels (``launches`` in each run's checks,
:class:`~geak_evaluator_triton.protocol.RunChecks`; ``import_launches`` in the
``imported`` frame). In timed calls :func:`own_launches` counts each call's
launches of the candidate's kernels (``own`` in each ``block``,
:class:`~geak_evaluator_triton.protocol.BlockFrame`), which
``timing_loop.time_case`` sums into ``zero_launch_calls``.

Interpretation (judge): :func:`report_run` rejects a run whose entry points
launched another file's kernels (``foreign``) or none of the candidate's
(``no_launch``); :func:`report_timed` rejects a case whose timed calls
launched none of the candidate's kernels (``no_launch``); stage ``anticheat``,
each kind reported once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from geak_evaluator_triton.protocol import LaunchCounts

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def classify(launches: list[tuple[str, str, bool]], files: dict[str, str]) -> LaunchCounts:
    """Candidate kernels vs kernels the entry point launched from elsewhere.

    Launches made by the harness itself (outside the entry points) are its business.
    ``files``: the candidate's file (``candidate``) and the reference's (``reference``).
    """
    counts = {"candidate": 0, "harness": 0}
    other: list[str] = []
    for name, path, from_entry in launches:
        if path == files["candidate"]:
            counts["candidate"] += 1
        elif not from_entry:
            counts["harness"] += 1
        else:
            label = "the reference" if path == files.get("reference") else path
            entry = f"{name} (defined in {label})"
            if entry not in other:
                other.append(entry)
    return {"candidate": counts["candidate"], "harness": counts["harness"], "other": other}


def own_launches(launches: list[tuple[str, str, bool]], own_file: str) -> int:
    """How many of ``launches`` (one timed call's) are of kernels defined in ``own_file``."""
    return sum(1 for _, path, _ in launches if path == own_file)


def report_run(verdict: Verdict, when: str, launches: LaunchCounts) -> None:
    """Reject a run (``when``) whose entry points launched foreign kernels or none of the
    candidate's."""
    if launches.get("other"):
        verdict.fail("anticheat", f"{when}, the entry point launched kernels that are not the "
                     "candidate's own: " + ", ".join(launches["other"][:3]), key="foreign")
    if launches.get("candidate", 0) == 0:
        verdict.fail("anticheat", f"{when}, no Triton kernel defined in the candidate was "
                     "launched", key="no_launch")


def report_timed(verdict: Verdict, case: str, zero_launch_calls: int) -> None:
    """Reject when ``zero_launch_calls`` timed calls of ``case`` launched none of the
    candidate's kernels."""
    if zero_launch_calls:
        verdict.fail("anticheat", f"{zero_launch_calls} timed call(s) of case {case!r} "
                     "launched none of the candidate's kernels", key="no_launch")
