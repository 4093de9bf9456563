"""Check: the timed calls computed what they were timed for.

Detection (child, ``timed_calls.TimedSide.block``): after every timed call of a
candidate, once its code has returned and before it runs again, trusted code
gathers its outputs at random positions of every tensor (``samples``), and on
calls picked at random (about ``verify_calls`` a case, and one more from a last
block of random length if none was picked) copies its whole outputs to the
host (``verified``). Neither choice exists before the call has ended, so a
candidate cannot do the work only on the calls that are looked at.

Both travel in each ``block`` (``samples``; ``verified``, or their count as
``deferred`` when the whole copies are kept for after the session and sent in
the ``verified`` frame; :class:`~geak_evaluator_triton.protocol.BlockFrame`).

Interpretation (judge, :func:`report`): both are compared with the reference's
outputs for the secret timing seed (:func:`problem`). On a checked case a
difference rejects the candidate; on a timing-only case (``Case.checked =
False``) it costs the verdict its speedup (``timed_outputs_differ``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from geak_core.api.tasks import Case, Task
from geak_evaluator_triton.reference_run import ReferenceRun
from geak_evaluator_triton.run_compare import compare_outputs, custom_compare, overrides_for

if TYPE_CHECKING:
    from geak_evaluator_triton.verdict import Verdict


def _leaf(value: Any, path: str) -> Any:
    """The tensor at ``path`` (``timed_calls.tensor_leaves``'s spelling) in ``value``, or None."""
    import re

    node = value
    for key, index in re.findall(r"\.?([^.\[\]]+)|\[(\d+)\]", path):
        try:
            node = node[int(index)] if index else node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def finite_where_expected(expected: Any, actual: Any) -> tuple[Any, Any]:
    """``expected`` and ``actual`` with every position where the reference's value is not
    finite (inf, nan) set to 0 on both sides, tensor by tensor where the two line up.

    The timing inputs are drawn at random: where the reference overflows on them (a float16
    ``x / y`` past 65504, say) its value says nothing of the function the candidate must
    compute, and a candidate that computes it more exactly there did not compute something
    else; a candidate cannot choose those positions (the seed is secret). Everywhere the
    reference is finite, the comparison is the usual one."""
    import torch

    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
        if (expected.is_floating_point() and actual.is_floating_point()
                and expected.shape == actual.shape and expected.device == actual.device):
            bad = ~torch.isfinite(expected)
            if bool(bad.any()):
                return expected.masked_fill(bad, 0), actual.masked_fill(bad, 0)
        return expected, actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        pairs = {k: finite_where_expected(v, actual[k]) if k in actual else (v, None) for k, v in expected.items()}
        return ({k: p[0] for k, p in pairs.items()},
                {**actual, **{k: p[1] for k, p in pairs.items() if k in actual}})
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(expected) == len(actual):
        pairs = [finite_where_expected(e, a) for e, a in zip(expected, actual, strict=True)]
        return type(expected)(p[0] for p in pairs), type(actual)(p[1] for p in pairs)
    return expected, actual


def sample_mismatch(expected: Any, samples: list[dict[str, Any]], overrides: dict[str, Any]) -> str:
    """The first call whose sampled outputs differ from ``expected`` at the same positions:
    a sentence, or "" when every sample matches."""
    import torch

    flats: dict[str, Any] = {}
    for number, call in enumerate(samples):
        for path, (positions, values) in call.items():
            if path not in flats:
                leaf = _leaf(expected, path)
                flats[path] = leaf.reshape(-1) if isinstance(leaf, torch.Tensor) else None
            flat = flats[path]
            if flat is None:
                return f"timed call {number + 1}: output {path or 'outputs'!r} is not one of the reference's tensors"
            if int(positions.max()) >= flat.numel() or values.dtype != flat.dtype:
                return (f"timed call {number + 1}: output {path or 'outputs'!r} has {flat.numel()} elements of "
                        f"{flat.dtype} in the reference, not what the call wrote")
            diffs = compare_outputs(*finite_where_expected(flat[positions], values), overrides, None)
            if diffs:
                return (f"timed call {number + 1}, output {path or 'outputs'!r} at sampled positions: "
                        f"{diffs[0]['message']}")
    return ""


def verified_mismatch(expected: Any, verified: list[tuple[int, Any]], overrides: dict[str, Any],
                      custom: list[dict[str, Any] | None]) -> tuple[str, list[dict[str, Any]]]:
    """The first kept call whose whole outputs differ: (sentence, mismatches), or ("", [])."""
    for (number, outputs), verdicts in zip(verified, custom, strict=True):
        diffs = compare_outputs(*finite_where_expected(expected, outputs), overrides, verdicts)
        if diffs:
            return f"timed call {number + 1}: {diffs[0]['message']}", diffs
    return "", []


def problem(task: Task, ref: ReferenceRun, case: Case, record: dict[str, Any],
            run_child: Any) -> tuple[str, list[dict[str, Any]]]:
    """Why the timed calls' outputs are not the reference's for the timing seed, or ""."""
    tally = record["tallies"]["other"]
    expected = ref.outputs.get(("timing", case.name, record["seed"]))
    if expected is None:
        return "the reference has no outputs for the timing seed", []
    overrides = overrides_for(task, case)
    if tally.received != tally.deferred:
        return (f"the whole outputs of {tally.deferred} timed call(s), kept for after the session, "
                f"reached the judge for {tally.received}"), []
    if not tally.verified:
        return "no timed call's outputs reached the judge", []
    custom: list[dict[str, Any] | None] = [None] * len(tally.verified)
    if ref.custom_compare:
        runs = [{"stage": "timing", "case": case.name, "seed": record["seed"], "outputs": outputs}
                for _, outputs in tally.verified]
        found = custom_compare(task, ref, runs, {case.name: case}, run_child)
        custom = [found.get(i) for i in range(len(runs))]
    why, mismatches = verified_mismatch(expected, tally.verified, overrides, custom)
    if why:
        return why, mismatches
    if tally.samples and not ref.custom_compare:
        return sample_mismatch(expected, tally.samples, overrides), []
    return "", []


def report(verdict: Verdict, task: Task, ref: ReferenceRun, case: Case, record: dict[str, Any],
           run_child: Any) -> str:
    """Reject a checked case whose timed outputs differ from the reference's; for a
    timing-only case, the note that costs the verdict its speedup ("" when they match)."""
    found, mismatches = problem(task, ref, case, record, run_child)
    if found and case.checked:
        verdict.fail("anticheat", f"the outputs of the timed calls of case {case.name!r} differ from the "
                     f"reference: {found}", mismatches=mismatches, key="timed_outputs")
    elif found:  # a timing-only case: the task does not judge these outputs, but no speed from them
        return f"{case.name}: {found}"
    return ""
