"""The timing loop and its checks without a GPU: sides that answer like children do."""

from __future__ import annotations

import contextlib

import pytest


class FakeSide:
    """A side whose calls take ``ms`` each; records what it was asked, and when it was paused."""

    def __init__(self, name, ms, log, untrusted=False, keep=True):
        self.name, self.ms, self.log, self.untrusted, self.keep = name, ms, log, untrusted, keep
        self.stoppable = untrusted
        self.paused = False

    def start_case(self, case, seed, warmup_ms):
        self.log.append((self.name, "start", case, seed, self._peer_paused()))
        return {"launch_us": 20.0, "estimate_ms": self.ms, "call_ms": self.ms + 0.05}

    def block(self, calls, hold_us, verify_p, reservoir):
        self.log.append((self.name, "block", calls, self._peer_paused()))
        kept = [(0, {"out": self.name})] if reservoir or (self.keep and verify_p > 0) else []
        return {"latencies": [self.ms] * calls, "gaps": [0.01] * calls, "own": [1] * calls,
                "samples": [{}] * calls, "verified": kept, "compute": []}

    def end_case(self):
        return {}

    def pause(self):
        self.paused = True
        self.log.append((self.name, "paused"))

    def resume(self):
        self.paused = False
        self.log.append((self.name, "resumed"))

    def _peer_paused(self):
        return getattr(self, "peer", None) is not None and self.peer.paused


OPTIONS = {"queue_ahead_us": 10.0, "repetitions": 0, "max_repetitions": 200, "min_repetitions": 10,
           "rep_ms": 1000.0, "verify_calls": 2}


def sides(log, keep=True):
    baseline = FakeSide("baseline", 1.0, log)
    candidate = FakeSide("candidate", 0.5, log, untrusted=True, keep=keep)
    baseline.peer = candidate
    return baseline, candidate


def test_blocks_alternate_and_the_candidate_is_paused_whenever_the_baseline_runs():
    from geak_evaluator_triton.timing_loop import time_case

    log: list = []
    baseline, candidate = sides(log)
    record = time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    starts = [e for e in log if e[1] == "start"]
    assert starts == [("baseline", "start", "c", 1, True), ("candidate", "start", "c", 99, False)]
    blocks = [e for e in log if e[1] == "block"]
    assert all(paused for name, _, _, paused in blocks if name == "baseline")
    firsts = [blocks[i][0] for i in range(0, len(blocks), 2)]
    assert len(firsts) >= 2  # the order flips each round
    assert firsts == ["baseline" if i % 2 == 0 else "candidate" for i in range(len(firsts))]
    assert record["reference_ms"] == 1.0 and record["candidate_ms"] == 0.5
    assert record["repetitions"] >= OPTIONS["min_repetitions"]
    assert not candidate.paused


@pytest.mark.parametrize("pause_baseline", [False, True])
def test_a_stoppable_baseline_is_paused_whenever_the_candidate_runs_and_only_then(pause_baseline):
    """``pause_baseline``: the baseline's side is stopped while the candidate's start, blocks,
    last block and end run, as the candidate's is while the baseline's run, so that each
    side comes to its blocks resumed from a stop; never while its own run. Off, the
    baseline is never paused."""
    from geak_evaluator_triton.timing_loop import time_case

    log: list = []
    baseline, candidate = sides(log, keep=False)
    baseline.stoppable = pause_baseline
    candidate.peer = baseline
    time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    runs = [e for e in log if e[1] in ("start", "block")]
    theirs = [e[-1] for e in runs if e[0] == "candidate"]
    assert len(theirs) >= 3  # its start, its blocks, the last block that keeps a call
    assert all(theirs) if pause_baseline else not any(theirs)
    assert all(e[-1] for e in runs if e[0] == "baseline")  # the candidate: always
    # never both stopped at once, and both running again at the end
    paused = {"baseline": False, "candidate": False}
    for entry in log:
        if entry[1] in ("paused", "resumed"):
            paused[entry[0]] = entry[1] == "paused"
            assert not all(paused.values())
    assert not baseline.paused and not candidate.paused
    assert any(e == ("baseline", "paused") for e in log) == pause_baseline


def test_an_untrusted_side_that_cannot_be_stopped_is_refused():
    from geak_evaluator_triton.timing_loop import time_case

    log: list = []
    baseline, candidate = sides(log)
    candidate.stoppable = False
    with pytest.raises(ValueError, match="stoppable"):
        time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    assert log == []


def test_a_fixed_repetition_count_is_honoured_and_nothing_kept_means_one_more_random_block():
    from geak_evaluator_triton.timing_loop import LAST_BLOCK, time_case

    log: list = []
    baseline, candidate = sides(log, keep=False)
    record = time_case(baseline, candidate, "c", 1, 99, {**OPTIONS, "repetitions": 40}, 0.0, 10.0)
    assert record["repetitions"] >= 40
    last = [e for e in log if e[1] == "block"][-1]
    assert last[0] == "candidate" and LAST_BLOCK[0] <= last[2] <= LAST_BLOCK[1]
    assert record["tallies"]["other"].verified


def test_timed_outputs_are_checked_at_their_sampled_positions_and_whole():
    import torch
    from geak_evaluator_triton.checks.timed_outputs import sample_mismatch, verified_mismatch

    expected = {"out": torch.arange(10, dtype=torch.float32)}
    good = [{"out": (torch.tensor([2, 7]), torch.tensor([2.0, 7.0]))}]
    assert sample_mismatch(expected, good, {}) == ""
    skipped = good + [{"out": (torch.tensor([3]), torch.tensor([float("nan")]))}]
    assert sample_mismatch(expected, skipped, {}).startswith("timed call 2, output 'out'")
    assert verified_mismatch(expected, [(4, {"out": torch.arange(10.0)})], {}, [None]) == ("", [])
    wrong, diffs = verified_mismatch(expected, [(4, {"out": torch.zeros(10)})], {}, [None])
    assert wrong.startswith("timed call 5") and diffs


def test_where_the_reference_overflows_on_the_timing_inputs_a_finite_candidate_value_is_not_a_difference():
    """kldiv_compute's float16 reference gives inf where x / y overflows; a candidate that
    computes in float32 there is timed. Everywhere the reference is finite, and wherever the
    candidate is not finite while the reference is, the outputs are compared as before."""
    import torch
    from geak_evaluator_triton.checks.timed_outputs import sample_mismatch, verified_mismatch

    expected = {"out": torch.tensor([1.0, float("inf"), 3.0, float("nan")], dtype=torch.float16)}
    exact = {"out": torch.tensor([1.0, 16.73, 3.0, 0.5], dtype=torch.float16)}
    assert verified_mismatch(expected, [(0, exact)], {}, [None]) == ("", [])
    sampled = [{"out": (torch.tensor([1, 2]), torch.tensor([16.73, 3.0], dtype=torch.float16))}]
    assert sample_mismatch(expected, sampled, {}) == ""
    off = {"out": torch.tensor([1.0, 16.73, 2.0, 0.5], dtype=torch.float16)}  # wrong where finite
    assert verified_mismatch(expected, [(0, off)], {}, [None])[0].startswith("timed call 1")
    overflowing = {"out": torch.tensor([float("inf"), 0.0, 3.0, 0.0], dtype=torch.float16)}
    assert verified_mismatch(expected, [(0, overflowing)], {}, [None])[0].startswith("timed call 1")
    assert sample_mismatch(expected, [{"out": (torch.tensor([0]), torch.tensor([float("inf")],
                                                                              dtype=torch.float16))}], {})


def _record(**changes):
    from geak_evaluator_triton.timing_loop import Tally

    tally = Tally()
    tally.add({"latencies": [0.5] * 20, "gaps": [0.01] * 20, "own": [1] * 20})
    record = {"case": "big", "seed": 7, "reference_ms": 1.0, "candidate_ms": 0.5, "reference_gap_ms": 0.01,
              "candidate_gap_ms": 0.01, "repetitions": 20, "reference_ci": 0.001, "candidate_ci": 0.001,
              "zero_launch_calls": 0, "wall_s": {}, "tallies": {"baseline": Tally(), "other": tally}}
    record.update(changes)
    return record


def _apply(record, strict=True, verified=None, extra=None):
    import torch
    from geak_core.api.model import EvalResult
    from geak_core.api.tasks import Case, EntryPoint, Task
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.reference_run import ReferenceRun
    from geak_evaluator_triton.timing_session import apply_timing
    from geak_evaluator_triton.verdict import Verdict
    from geak_hw_nvidia_hopper.profiles import H100

    case = Case(name="big", bytes=3 * 4 * (1 << 24), flops=1 << 24, dtype="float32")
    ref = ReferenceRun([case], [], [], False, [1], {("timing", "big", 7): {"out": torch.ones(4)}},
                       timing_seed=7)
    task = Task(suite="t", id="t", instruction="", entry_points=[EntryPoint("k")], harness="m:H",
                forbid_torch_compute=strict)
    tally = record["tallies"]["other"]
    tally.verified = verified if verified is not None else [(3, {"out": torch.ones(4)})]
    if extra:
        tally.extra.append(extra)
    result = EvalResult(task_id="t", candidate_id="c", correct=True, call_ok=True)
    apply_timing(task, ref, [record], Verdict(), True, "", H100, TritonEvaluatorOptions(), result, None)
    return result


def test_an_honest_record_gives_a_speedup():
    result = _apply(_record(candidate_ms=0.1))
    assert result.correct and result.performance_measured and result.speedup == pytest.approx(10.0)


def test_compute_with_torch_or_guard_findings_while_timed_reject_the_candidate():
    result = _apply(_record(), extra={"compute": ["torch op aten.add at line 9"], "violations": []})
    assert not result.correct and "while being timed on case 'big'" in result.reason and "aten.add" in result.reason
    result = _apply(_record(), extra={"violations": ["replaced or modified torch.equal"], "compute": []})
    assert not result.correct and "torch.equal" in result.reason


def test_a_throughput_above_the_peak_rejects_under_a_strict_protocol_and_flags_otherwise():
    import torch

    fast = _record(candidate_ms=0.05)  # 201 MB in 50 us: 4 TB/s on a 3.35 TB/s H100
    result = _apply(fast)
    assert not result.correct and "above_peak" in result.flags and "device's peak" in result.reason
    lenient = _apply(_record(candidate_ms=0.05), strict=False)
    assert lenient.correct and "above_peak" in lenient.flags and lenient.performance_measured
    wrong = _apply(_record(), verified=[(2, {"out": torch.zeros(4)})])
    assert not wrong.correct and "timed call 3" in wrong.reason


def _apply_cases(records, strict=False, protocol=None):
    """``apply_timing`` on several cases named as ``records``'s, all alike (those of ``_apply``)."""
    import torch
    from geak_core.api.model import EvalResult
    from geak_core.api.tasks import Case, EntryPoint, Task
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.reference_run import ReferenceRun
    from geak_evaluator_triton.timing_session import apply_timing
    from geak_evaluator_triton.verdict import Verdict
    from geak_hw_nvidia_hopper.profiles import H100

    cases = [Case(name=r["case"], bytes=3 * 4 * (1 << 24), flops=1 << 24, dtype="float32") for r in records]
    ref = ReferenceRun(cases, [], [], False, [1], {("timing", c.name, 7): {"out": torch.ones(4)} for c in cases},
                       timing_seed=7)
    task = Task(suite="t", id="t", instruction="", entry_points=[EntryPoint("k")], harness="m:H",
                forbid_torch_compute=strict, extra={"protocol": protocol} if protocol else {})
    for record in records:
        record["tallies"]["other"].verified = [(3, {"out": torch.ones(4)})]
    result = EvalResult(task_id="t", candidate_id="c", correct=True, call_ok=True)
    apply_timing(task, ref, records, Verdict(), True, "", H100, TritonEvaluatorOptions(), result, None)
    return result


def test_a_case_above_the_peak_counts_in_no_speedup_and_the_note_says_which():
    # "fast" moves 201 MB in 50 us (4 TB/s on a 3.35 TB/s H100): 20x, impossible; "slow" 0.9x
    result = _apply_cases([_record(case="fast", candidate_ms=0.05), _record(case="slow", candidate_ms=1.0 / 0.9)])
    assert result.correct and result.performance_measured and "above_peak" in result.flags
    assert [s.flags for s in result.shapes] == [["above_peak"], []]
    assert result.speedup == pytest.approx(0.9)  # counted, "fast" would have made it 10.45x
    assert (result.speedup_sum, result.speedup_geomean, result.speedup_mean_ratio) == pytest.approx((0.9,) * 3)
    assert result.roofline_fraction == pytest.approx(result.shapes[1].roofline_fraction)
    assert "1 of 2 timed cases left out of every speedup" in result.performance_note
    assert "case 'fast' measured at 1.20x the device's peak" in result.performance_note


def test_a_verdict_whose_every_case_is_above_the_peak_has_no_speedup_and_says_why():
    result = _apply_cases([_record(case="a", candidate_ms=0.05), _record(case="b", candidate_ms=0.04)])
    assert result.correct and result.performance_measured and result.speedup is None
    assert (result.speedup_sum, result.speedup_geomean, result.speedup_mean_ratio) == (None, None, None)
    assert result.roofline_fraction is None and "suspicious_speedup" not in result.flags
    assert result.performance_note.startswith("no speedup: every timed case (2) was measured faster than the "
                                              "hardware allows (above_peak)")
    assert "case 'a'" in result.performance_note and "case 'b'" in result.performance_note


def test_a_case_above_the_peak_rejects_under_tritonbenchs_strict_protocol_too():
    records = lambda: [_record(case="fast", candidate_ms=0.05), _record(case="slow", candidate_ms=0.5)]  # noqa: E731
    strict = _apply_cases(records(), protocol="strict")
    assert not strict.correct and strict.failed_stage == "anticheat" and strict.speedup is None
    assert "case 'fast' measured at" in strict.reason and "did not do the case's work" in strict.reason
    published = _apply_cases(records(), protocol="published")
    assert published.correct and published.speedup == pytest.approx(2.0)


def test_calls_queued_late_are_not_counted_and_lengthen_the_busy_wait():
    from geak_evaluator_triton.timing_loop import time_case

    log: list = []
    baseline, candidate = sides(log)
    real_block = candidate.block
    holds = []

    def block(calls, hold_us, verify_p, reservoir):
        holds.append(hold_us)
        found = real_block(calls, hold_us, verify_p, reservoir)
        if len(holds) == 1:  # the first block: every call but the first late, and slow
            found["late_at"] = list(range(1, calls))
            found["latencies"] = [found["latencies"][0]] + [9.0] * (calls - 1)
        return found

    candidate.block = block
    record = time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    assert record["holds_lengthened"] == 1 and holds[1] >= 2 * holds[0]
    assert record["hold_us"] == holds[-1]
    other = record["tallies"]["other"]
    # the late calls' latencies are not counted; the rest of the case's latencies stand
    assert 9.0 not in other.latencies and other.late_latencies == [9.0] * len(other.late_latencies)
    assert len(other.late_latencies) == other.late > 0
    assert other.calls == len(other.latencies) + len(other.late_latencies)
    assert record["late_kept"]["candidate"] == 0 and record["wall_s"]["late.candidate"] == other.late
    assert record["candidate_ms"] == candidate.ms


def test_a_bare_tensor_output_is_sampled_under_the_empty_path():
    import torch
    from geak_evaluator_triton.checks.timed_outputs import sample_mismatch
    from geak_evaluator_triton.timed_calls import tensor_leaves

    assert [p for p, _ in tensor_leaves(torch.zeros(3))] == [""]
    assert [p for p, _ in tensor_leaves({"output": torch.zeros(3), "rest": [torch.ones(1)]})] == ["output", "rest[0]"]
    assert sample_mismatch(torch.arange(4.0), [{"": (torch.tensor([1]), torch.tensor([1.0]))}], {}) == ""
    expected = {"output": torch.arange(4.0)}
    assert sample_mismatch(expected, [{"output": (torch.tensor([3]), torch.tensor([3.0]))}], {}) == ""


def test_whole_copies_kept_for_after_the_session_must_all_arrive():
    """A candidate side keeps its whole copies for after the session (``deferred``); the
    record is judged on them once they arrive, and a timing whose kept copies do not all
    arrive is rejected."""
    import torch

    record = _record()
    record["tallies"]["other"].add({"latencies": [0.5], "deferred": 2})
    assert record["tallies"]["other"].deferred == 2 and not record["tallies"]["other"].extra
    missing = _apply(record, verified=[])
    assert not missing.correct and "kept for after the session, reached the judge for 0" in missing.reason

    record = _record()
    tally = record["tallies"]["other"]
    tally.add({"latencies": [0.5], "deferred": 1})
    tally.received = 1  # what candidate_run.on_verified counts
    assert _apply(record, verified=[(21, {"out": torch.ones(4)})]).correct
    tally.received = 1
    wrong = _apply(record, verified=[(21, {"out": torch.zeros(4)})])
    assert not wrong.correct and "timed call 22" in wrong.reason


def test_a_side_that_kept_copies_gets_no_extra_random_block():
    from geak_evaluator_triton.timing_loop import time_case

    log: list = []
    baseline, candidate = sides(log, keep=False)
    block = candidate.block

    def deferring(calls, hold_us, verify_p, reservoir):
        frame = block(calls, hold_us, verify_p, reservoir)
        frame["deferred"] = 1 if verify_p > 0 else 0
        return frame

    candidate.block = deferring
    record = time_case(baseline, candidate, "c", 1, 99, {**OPTIONS, "repetitions": 40}, 0.0, 10.0)
    assert record["tallies"]["other"].deferred > 0
    assert not record["tallies"]["other"].verified  # they come after the session
    names = [e[0] for e in log if e[1] == "block"]
    assert names.count("candidate") == names.count("baseline")  # no last block of random length
    assert record["repetitions"] >= 40


def test_a_side_whose_calls_are_all_late_ends_its_loop_and_the_verdict_flags_the_late_calls_kept():
    from geak_evaluator_triton.timing_loop import (
        MAX_BLOCK,
        MAX_CALLS_OVER,
        MAX_LENGTHENINGS,
        time_case,
    )

    def always_late(block):
        def late_block(calls, hold_us, verify_p, reservoir):
            frame = block(calls, hold_us, verify_p, reservoir)
            frame["late_at"] = list(range(calls))  # a loaded host: every call queued after its start event
            return frame
        return late_block

    baseline, candidate = sides([])
    candidate.block = always_late(candidate.block)
    record = time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    assert record["holds_lengthened"] == MAX_LENGTHENINGS
    other = record["tallies"]["other"]
    # it stopped once it had called MAX_CALLS_OVER times the calls it needed, then counted the late ones
    need = OPTIONS["min_repetitions"]
    assert MAX_CALLS_OVER * need <= other.calls < MAX_CALLS_OVER * need + MAX_BLOCK
    assert record["repetitions"] >= need
    assert record["late_kept"]["candidate"] == other.late_kept == other.calls
    assert record["late_kept"]["baseline"] == 0
    result = _apply(_record(late_kept=record["late_kept"], repetitions=record["repetitions"]))
    assert result.correct and result.performance_measured and "late_calls" in result.flags
    assert "late_calls" not in _apply(_record()).flags

    baseline, candidate = sides([])  # a loop of exactly N calls ends too
    candidate.block = always_late(candidate.block)
    record = time_case(baseline, candidate, "c", 1, 99, dict(OPTIONS, repetitions=12), 0.01, 10.0)
    assert MAX_CALLS_OVER * 12 <= record["tallies"]["other"].calls and record["repetitions"] >= 12


def _late_side(side, rng, spread, sleep=False):
    """``side``'s block, every call late (it waits for the device) and its latency within
    ``spread`` of ``side.ms``; with ``sleep``, a block also takes that long on the host."""
    import time

    def block(calls, hold_us, verify_p, reservoir):
        frame = FakeSide.block(side, calls, hold_us, verify_p, reservoir)
        if sleep:
            time.sleep(calls * side.ms / 1e3)
        frame["latencies"] = [side.ms * (1 + rng.uniform(-spread, spread)) for _ in range(calls)]
        frame["late_at"] = list(range(calls))
        return frame
    return block


def test_where_most_calls_stay_late_both_sides_count_them_and_the_loop_goes_on_to_its_precision():
    """Calls that wait for the device (masked_select's output size, a host-side solver) are
    late at any busy-wait, on both sides: past MAX_CALLS_OVER times the calls needed, the
    late calls of both sides count and the loop runs on to the case's precision, not
    stopping at 40 calls a side with a median known to 10-25 %."""
    import random

    from geak_evaluator_triton.timing_loop import MAX_CALLS_OVER, time_case

    rng = random.Random(5)
    baseline, candidate = sides([])
    baseline.block, candidate.block = _late_side(baseline, rng, 0.1), _late_side(candidate, rng, 0.1)
    record = time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.02, 10.0)
    b, o = record["tallies"]["baseline"], record["tallies"]["other"]
    need = OPTIONS["min_repetitions"]
    assert min(b.calls, o.calls) > MAX_CALLS_OVER * need  # went on past the point it used to stop
    assert b.late_kept == b.calls and o.late_kept == o.calls  # every call counted, every one late
    assert b.interval() <= 0.02 and o.interval() <= 0.02  # stopped at the precision asked
    assert record["repetitions"] < OPTIONS["max_repetitions"]
    assert record["late_kept"] == {"baseline": b.calls, "candidate": o.calls}


def test_where_late_calls_start_to_count_after_the_time_budget_is_spent_the_loop_still_goes_on():
    """Calls slow enough that MAX_CALLS_OVER times the calls needed take longer than rep_ms:
    once the late calls count, the loop has rep_ms again to reach its precision, instead of
    ending with its first 40 calls a side."""
    import random
    import time

    from geak_evaluator_triton.timing_loop import MAX_CALLS_OVER, time_case

    rng = random.Random(7)
    baseline, candidate = sides([])
    # the calls take their time on the host
    baseline.block, candidate.block = (_late_side(baseline, rng, 0.2, sleep=True),
                                       _late_side(candidate, rng, 0.2, sleep=True))
    options = dict(OPTIONS, rep_ms=40.0, max_repetitions=100000)
    need = options["min_repetitions"]
    began = time.perf_counter()
    record = time_case(baseline, candidate, "c", 1, 99, options, 0.005, 10.0)
    b, o = record["tallies"]["baseline"], record["tallies"]["other"]
    # 40 calls a side take 60 ms here, past rep_ms: before, the loop ended at the switch
    assert min(b.calls, o.calls) >= MAX_CALLS_OVER * need + need
    assert b.late_kept == b.calls and o.late_kept == o.calls
    assert time.perf_counter() - began < 5.0  # the second budget is rep_ms too, not open-ended


def test_late_rep_ms_sets_the_budget_from_where_late_calls_count():
    """``late_rep_ms`` (an evaluator option, 0: rep_ms) is the loop's budget once a case's
    late calls count: the loop runs on for it after the switch, and no longer."""
    import random
    import time

    from geak_evaluator_triton.timing_loop import MAX_CALLS_OVER, time_case

    after = {}
    for late_rep_ms in (0.0, 200.0):
        rng = random.Random(7)
        baseline, candidate = sides([])
        baseline.block, candidate.block = (_late_side(baseline, rng, 0.2, sleep=True),
                                           _late_side(candidate, rng, 0.2, sleep=True))
        options = dict(OPTIONS, rep_ms=40.0, late_rep_ms=late_rep_ms, max_repetitions=100000)
        need = options["min_repetitions"]
        began = time.perf_counter()
        record = time_case(baseline, candidate, "c", 1, 99, options, 0.0, 10.0)
        b, o = record["tallies"]["baseline"], record["tallies"]["other"]
        assert b.late_kept == b.calls and o.late_kept == o.calls
        # the host time of the calls after the switch (1.5 ms a call here, both sides a round)
        after[late_rep_ms] = ((b.calls - MAX_CALLS_OVER * need) * baseline.ms
                              + (o.calls - MAX_CALLS_OVER * need) * candidate.ms)
        assert time.perf_counter() - began < 5.0  # bounded
    assert after[200.0] >= 0.9 * 200.0 > 2 * after[0.0]
    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.timing_session import loop_options

    assert loop_options(TritonEvaluatorOptions(late_rep_ms=1000.0), None)["late_rep_ms"] == 1000.0
    assert "late_rep_ms must be >= 0" in "; ".join(TritonEvaluatorOptions(late_rep_ms=-1.0).validate())


def test_an_input_the_baseline_changes_too_is_the_tasks_to_change_and_any_other_rejects():
    """An optimizer step updates its parameters in place: the candidate doing so too is not
    tampering; changing an input the baseline leaves alone still rejects it."""
    same = _apply(_record(ended={"baseline": {"mutates": ["arg0", "arg2"]},
                                 "other": {"mutated": ["arg0", "arg2"]}}))
    assert same.correct and same.performance_measured
    more = _apply(_record(ended={"baseline": {"mutates": ["arg0"]}, "other": {"mutated": ["arg0", "arg1"]}}))
    assert not more.correct and "arg1" in more.reason and "arg0," not in more.reason


def test_a_timed_side_restores_what_a_call_changes_in_its_inputs_before_each_later_call():
    """``TimedSide``'s bookkeeping (on the CPU; the calls themselves are timed on a GPU): the
    inputs the first call changed are found and put back, the others are left as they are."""
    import torch
    from geak_evaluator_triton.checks.input_mutation import snapshot_inputs
    from geak_evaluator_triton.timed_calls import TimedSide

    class Step:
        def allocate(self, case, inputs):
            return {}

        def run(self, module, case, inputs, outputs):
            inputs["arg0"].add_(inputs["arg1"])  # param += grad, in place
            outputs["param"] = inputs["arg0"]

    side = TimedSide(Step(), None, None, 1.0)
    side.inputs = {"seed": 3, "arg0": torch.zeros(4), "arg1": torch.ones(4)}
    pristine = snapshot_inputs(side.inputs)
    side._call()
    side._find_changes(pristine)
    assert side.mutates == ["arg0"] and len(side._restore) == 1
    for _ in range(3):
        side._restore_inputs()
        out = side._call()
    assert out["param"].tolist() == [1.0] * 4  # one step, as the reference's one call gives
    assert side.inputs["arg1"].tolist() == [1.0] * 4


def test_a_parameter_that_requires_grad_is_restored_too():
    """KernelBench-X's Adam: the inputs are leaves that require grad, stepped by
    ``torch.optim`` under no_grad; autograd refuses an in-place copy into such a leaf, so the
    restore is made outside autograd (on an H200 the baseline's timer raised "a leaf
    Variable that requires grad is being used in an in-place operation")."""
    import torch
    from geak_evaluator_triton.checks.input_mutation import snapshot_inputs
    from geak_evaluator_triton.timed_calls import TimedSide

    class OptimizerStep:
        def allocate(self, case, inputs):
            return {}

        def run(self, module, case, inputs, outputs):
            (param,) = inputs["arg0"]
            torch.optim.SGD([param], lr=1.0).step()
            outputs["param"] = param

    param = torch.zeros(4, requires_grad=True)
    param.grad = torch.ones(4)
    side = TimedSide(OptimizerStep(), None, None, 1.0)
    side.inputs = {"seed": 0, "arg0": [param]}
    pristine = snapshot_inputs(side.inputs)
    side._call()
    side._find_changes(pristine)
    assert len(side._restore) == 1
    for _ in range(3):
        side._restore_inputs()
        out = side._call()
    assert out["param"].tolist() == [-1.0] * 4 and param.requires_grad and param.is_leaf


def test_a_side_that_ended_while_timed_says_how_its_process_ended():
    from geak_evaluator_triton.timing_session import ENDED, with_exit

    reason = f"timing failed on case 'perf_8': the candidate {ENDED}"
    killed = "killed by SIGKILL (often: out of host memory)"
    assert with_exit(reason, killed) == f"{reason} (its process {killed})"
    assert with_exit("the candidate raised ValueError while being timed", killed).endswith("timed")
    assert with_exit(reason, "") == reason and with_exit("", killed) == ""


def test_once_late_calls_count_the_busy_wait_goes_back_to_its_first_length_and_stays():
    """Calls late at any busy-wait: the lengthened busy-waits were most of such a loop's time
    (masked_select on an H200: 6.4 of 8.3 s, 42-57 calls a side), so once the late calls count,
    both sides' busy-wait is its first length again, and it is not lengthened after."""
    import random

    from geak_evaluator_triton.timing_loop import MAX_CALLS_OVER, MAX_LENGTHENINGS, time_case

    rng = random.Random(11)
    baseline, candidate = sides([])
    holds = {"baseline": [], "candidate": []}

    def recording(name, block):
        def wrapped(calls, hold_us, verify_p, reservoir):
            frame = block(calls, hold_us, verify_p, reservoir)
            holds[name].append((hold_us, calls))
            return frame
        return wrapped

    baseline.block = recording("baseline", _late_side(baseline, rng, 0.1))
    candidate.block = recording("candidate", _late_side(candidate, rng, 0.1))
    record = time_case(baseline, candidate, "c", 1, 99, OPTIONS, 0.01, 10.0)
    need = OPTIONS["min_repetitions"]
    assert record["holds_lengthened"] == MAX_LENGTHENINGS
    for asked in holds.values():
        first = asked[0][0]
        assert max(h for h, _ in asked) > first  # lengthened while the late calls did not count
        counted, after = 0, []
        for hold, calls in asked:
            if counted >= MAX_CALLS_OVER * need:
                after.append(hold)
            counted += calls
        assert after and set(after) == {first}  # from the switch on: the first length, kept
    assert record["hold_us"] == round(holds["baseline"][0][0], 1)


class GapSide(FakeSide):
    """A candidate side whose blocks outlast their device span by ``gap_ms`` a call."""

    def __init__(self, name, ms, log, gap_ms):
        super().__init__(name, ms, log, untrusted=True)
        self.gap_ms = gap_ms

    def block(self, calls, hold_us, verify_p, reservoir):
        return {**super().block(calls, hold_us, verify_p, reservoir), "gaps": [self.gap_ms] * calls}


def _session(candidate, log):
    from geak_core.api.tasks import Case
    from geak_evaluator_triton.reference_run import ReferenceRun
    from geak_evaluator_triton.timing_session import run_session
    from geak_evaluator_triton.verdict import Verdict

    baseline = FakeSide("baseline", 1.0, log)
    baseline.peer = candidate
    ref = ReferenceRun([Case(name="big", bytes=1 << 20, flops=1 << 20, dtype="float32")], [], [], False, [1], {},
                       timing_seed=7)
    records, problem = run_session(ref, None, {**OPTIONS, "warmup_ms": 1.0, "target_ci": 0.01}, baseline,
                                   candidate, 7, {"big": 1.0}, Verdict())
    assert problem == "" and len(records) == 1
    return records[0]


def test_a_gap_that_does_not_come_back_when_the_case_is_timed_again_is_not_charged():
    """A block outlasting its device span on the first timing only (another process's moment on
    the device, a stalled host) gets the case timed once more, and the second timing is used:
    no timing_mismatch. Work hidden in every call shows both times and is charged."""
    import torch
    from geak_evaluator_triton.checks.side_work import charged_latency, found

    log: list = []
    record = _session(_Once(GapSide("candidate", 0.5, log, gap_ms=0.8)), log)
    assert "first" in record and found(record["first"]) and not found(record)
    assert charged_latency(record) == (0.5, False)
    record["first"]["tallies"]["other"].verified = [(3, {"out": torch.ones(4)})]
    result = _apply(record)
    assert result.correct and "timing_mismatch" not in result.flags
    assert result.speedup == pytest.approx(2.0) and result.phases["timing.retimed_cases"] == 1

    log = []
    hidden = GapSide("candidate", 0.5, log, gap_ms=0.8)
    hidden.replier = _Replier(log)
    record = _session(hidden, log)
    # the second timing is off the candidate's clock, and only it
    waits = [i for i, e in enumerate(log) if e[0] == "judge_waiting"]
    starts = [i for i, e in enumerate(log) if e[:2] == ("candidate", "start")]
    assert len(waits) == 2 and waits[0] < starts[1] < waits[1] and starts[0] < waits[0]
    assert "first" in record and found(record["first"]) and found(record)
    record["first"]["tallies"]["other"].verified = [(3, {"out": torch.ones(4)})]
    result = _apply(record)
    assert "timing_mismatch" in result.flags and result.speedup < 1.0

    log = []
    honest = GapSide("candidate", 0.5, log, gap_ms=0.01)
    record = _session(honest, log)
    assert "first" not in record and [e[2] for e in log if e[1] == "start"] == ["big", "big"]


class _Replier:
    """What run_session asks of a candidate child's replier: the judge's waiting, logged."""

    def __init__(self, log):
        self.log = log

    @contextlib.contextmanager
    def judge_waiting(self):
        self.log.append(("judge_waiting", "in"))
        yield
        self.log.append(("judge_waiting", "out"))


class _Once:
    """``side`` with its gaps only until its first case ends (the first timing of the case)."""

    def __init__(self, side):
        self.side, self.untrusted, self.ended = side, True, False

    def __getattr__(self, name):
        return getattr(self.side, name)

    def block(self, calls, hold_us, verify_p, reservoir):
        frame = self.side.block(calls, hold_us, verify_p, reservoir)
        if self.ended:
            frame["gaps"] = [0.01] * calls
        return frame

    def end_case(self):
        self.ended = True
        return self.side.end_case()


def test_whole_copies_kept_over_two_timings_of_a_case_go_to_each_timing_in_turn():
    """candidate_run.on_verified: the child kept the first timing's copies first."""
    from types import SimpleNamespace

    from geak_evaluator_triton.candidate_run import CandidateFrames

    first, second = _record(), _record()
    first["tallies"]["other"].deferred, second["tallies"]["other"].deferred = 1, 2
    second["first"] = first
    holder = SimpleNamespace(timings=[second])
    CandidateFrames.on_verified(holder, {"cases": {"big": [(3, "a"), (5, "b"), (8, "c")]}})
    assert first["tallies"]["other"].verified == [(3, "a")] and first["tallies"]["other"].received == 1
    assert second["tallies"]["other"].verified == [(5, "b"), (8, "c")] and second["tallies"]["other"].received == 2


def test_the_garbage_collector_is_paused_while_timed_and_left_as_it_was():
    import gc

    from geak_evaluator_triton.timed_calls import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a call that raises")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off before: off after
    finally:
        gc.enable()


def test_a_session_times_both_sides_on_the_timing_seed():
    """The baseline draws its inputs on the timing seed as the candidate does, not on the
    task's first seed: a call's time can depend on its values (torch.linalg.eig: 3.03-3.30 ms
    across five random 128 x 128 matrices on one CPU), so different inputs time different
    work. A case timed once more (side_work) is on that seed too."""
    log = []
    candidate = FakeSide("candidate", 0.5, log, untrusted=True)
    _session(candidate, log)
    starts = [(entry[0], entry[3]) for entry in log if entry[1] == "start"]
    assert starts == [("baseline", 7), ("candidate", 7)]  # ref.seeds[0] is 1 there
    log.clear()
    _session(GapSide("candidate", 0.5, log, gap_ms=0.8), log)  # work hidden on every call
    starts = [(entry[0], entry[3]) for entry in log if entry[1] == "start"]
    assert len(starts) == 4 and {seed for _, seed in starts} == {7}  # timed twice, both on seed 7


def test_a_cases_record_says_whether_each_sides_calling_thread_took_the_calling_cpu():
    """case_ready's ``calling_cpu`` and ``beside`` (timed_calls.serve) counted per side in
    the record's ``wall_s`` (``pinned.*``, ``beside.*``), which the phases sum."""
    from geak_evaluator_triton.timing_loop import time_case

    class Answered(FakeSide):
        def __init__(self, name, log, cpu, untrusted=False):
            super().__init__(name, 1.0, log, untrusted=untrusted)
            self.cpu = cpu

        def start_case(self, case, seed, warmup_ms):
            return {**super().start_case(case, seed, warmup_ms), "calling_cpu": self.cpu,
                    "beside": 2 if self.cpu is not None else None}

    log = []
    record = time_case(Answered("baseline", log, 3), Answered("candidate", log, None, untrusted=True), "c", 1, 1,
                       dict(OPTIONS, repetitions=10), 0.0, 0.0)
    assert record["wall_s"]["pinned.baseline"] == 1 and record["wall_s"]["pinned.candidate"] == 0
    assert record["wall_s"]["beside.baseline"] == 2 and record["wall_s"]["beside.candidate"] == 0

    class Junk(Answered):  # the candidate's frame is its own: no count is taken on trust
        def start_case(self, case, seed, warmup_ms):
            return {**super().start_case(case, seed, warmup_ms), "beside": self.junk}

    for junk in ("many", -1, 1 << 40, 2.5, True, [1]):
        candidate = Junk("candidate", log, 3, untrusted=True)
        candidate.junk = junk
        record = time_case(Answered("baseline", log, 3), candidate, "c", 1, 1, dict(OPTIONS, repetitions=10),
                           0.0, 0.0)
        assert record["wall_s"]["beside.candidate"] == 0, junk


def _holding_side(side, rng, late):
    """``side``'s blocks, each call ``late`` or not, recording the busy-wait each block asked for."""
    side.holds = []

    def block(calls, hold_us, verify_p, reservoir):
        side.holds.append(hold_us)
        frame = FakeSide.block(side, calls, hold_us, verify_p, reservoir)
        frame["latencies"] = [side.ms * (1 + rng.uniform(-0.1, 0.1)) for _ in range(calls)]
        frame["late_at"] = list(range(calls)) if late else []
        return frame
    return block


def test_late_hold_us_shortens_the_busy_wait_once_late_calls_count_only_where_the_baseline_was_late_too():
    """``late_hold_us`` (0: the case's first busy-wait) is the busy-wait from where both sides'
    late calls count, if the baseline's own calls were mostly late: a candidate whose calls
    are late on purpose cannot shorten the busy-wait that keeps the baseline's launch path out
    of its latencies."""
    import random

    from geak_evaluator_triton.options import TritonEvaluatorOptions
    from geak_evaluator_triton.timed_calls import hold_for
    from geak_evaluator_triton.timing_loop import time_case
    from geak_evaluator_triton.timing_session import loop_options

    first = hold_for(20.0, OPTIONS["queue_ahead_us"])  # the fake sides' launch_us
    after = {}
    for late_hold_us, baseline_late in ((7.0, True), (7.0, False), (0.0, True)):
        rng = random.Random(3)
        baseline, candidate = sides([])
        baseline.block = _holding_side(baseline, rng, baseline_late)
        candidate.block = _holding_side(candidate, rng, True)
        options = dict(OPTIONS, late_hold_us=late_hold_us, max_repetitions=400)
        record = time_case(baseline, candidate, "c", 1, 99, options, 0.02, 10.0)
        o = record["tallies"]["other"]
        assert o.late_kept > 0  # the candidate's late calls were counted: the switch happened
        assert baseline.holds[0] == candidate.holds[0] == first
        after[(late_hold_us, baseline_late)] = (baseline.holds[-1], candidate.holds[-1], record["hold_us"])
    assert after[(7.0, True)] == (7.0, 7.0, 7.0)
    assert after[(7.0, False)] == (first, first, first)
    assert after[(0.0, True)] == (first, first, first)
    assert loop_options(TritonEvaluatorOptions(late_hold_us=10.0), None)["late_hold_us"] == 10.0
    assert "late_hold_us must be >= 0" in "; ".join(TritonEvaluatorOptions(late_hold_us=-1.0).validate())
