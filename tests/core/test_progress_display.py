"""The live progress of `geak-core run` and `geak-core eval`: a status line on a terminal,
plain lines otherwise."""

from __future__ import annotations

import io
import re
import time

from geak_core.api.model import EvalResult, TaskSummary
from geak_core.api.tasks import Task
from geak_core.cli.cli_eval import EvalProgress
from geak_core.engine.progress import CandidateJudged, Progress, format_duration, format_tokens


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def judged(task, lineage, iteration, correct, speedup=None):
    result = EvalResult(task_id=task, candidate_id=f"{task}/L{lineage}/I{iteration}", call_ok=True,
                        correct=correct, speedup=speedup, failed_stage=None if correct else "stage1",
                        reason=None if correct else "outputs differ")
    return CandidateJudged(task, lineage, iteration, "generate" if iteration == 0 else "reflect", result)


def usage():
    return {"prompt_tokens": 1200, "completion_tokens": 300, "cost_usd": 0.01}


def test_without_a_terminal_each_finished_task_writes_a_plain_progress_line():
    lines, clock = [], Clock()
    progress = Progress(lines.append, 2, lineages=2, iterations=3, usage=usage, tty=False, clock=clock)
    for lineage in range(2):
        progress.candidate_judged(judged("add", lineage, 0, False))
        clock.now += 10
        progress.candidate_judged(judged("add", lineage, 1, True, 1.5))
        clock.now += 10
    progress.task_finished(TaskSummary("add", correct=True, best_speedup=1.5))
    progress.close()
    assert lines[:2] == ["[add] L0 I0 generate -> stage1: outputs differ", "[add] L0 I1 reflect  -> correct speedup 1.50x"]
    # 4 rounds in 40 s; the other task may take 2 lineages x 3 rounds more: 60 s
    assert lines[-1] == ("progress: tasks 1/2 (1 correct)  lineages 0 at work of 4  candidates 4 judged "
                         "(2 correct)  best 1.50x  tokens 1.5k $0.0100  0:40, ETA 1:00")
    assert all("\033" not in line for line in lines)


def test_the_estimate_counts_the_rounds_left_to_unfinished_tasks():
    clock = Clock()
    progress = Progress(lambda _: None, 2, lineages=2, iterations=3, tty=False, clock=clock)
    for iteration in range(3):
        progress.candidate_judged(judged("add", 0, iteration, iteration == 2))
    clock.now += 30
    assert progress.eta_s() == 90.0  # 9 rounds left at 10 s a round
    text = progress.status_text()
    assert "lineages 1 at work of 4" in text and "candidates 3 judged (1 correct)" in text
    assert "tokens" not in text  # no usage given: left out rather than shown as zero


def test_without_lineages_the_estimate_counts_tasks():
    clock = Clock()
    progress = Progress(lambda _: None, 4, tty=False, clock=clock)
    assert progress.eta_s() is None
    clock.now += 60
    progress.task_finished(TaskSummary("a"))
    assert progress.eta_s() == 180.0


def test_on_a_terminal_the_status_line_is_redrawn_under_each_line_and_cleared_at_the_end(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    lines, stream, clock = [], io.StringIO(), Clock()
    progress = Progress(lines.append, 1, lineages=1, iterations=2, usage=usage, tty=True, stream=stream,
                        refresh_s=0, clock=clock)
    progress.candidate_judged(judged("add", 0, 0, True, 2.0))
    shown = stream.getvalue()
    assert shown.startswith("\r\033[K\r\033[K")  # cleared before the line, redrawn after
    assert shown.endswith("tasks 0/1 (0 correct)  lineages 1 at work of 1  candidates 1 judged (1 correct)"
                          "  best 2.00x  tokens 1.5k $0.0100  0:00, ETA 0:00")
    progress.task_finished(TaskSummary("add", correct=True, best_speedup=2.0))
    monkeypatch.setenv("COLUMNS", "40")  # a wrapped line could not be redrawn: it is cut
    progress.status.draw()
    assert stream.getvalue().endswith("\r\033[K" + "tasks 1/1 (1 correct)  lineages 0 at work"[:39])
    progress.close()
    assert stream.getvalue().endswith("\r\033[K") and lines == ["[add] L0 I0 generate -> correct speedup 2.00x"]


def test_the_terminal_clock_moves_while_nothing_happens():
    stream = io.StringIO()
    progress = Progress(lambda _: None, 1, tty=True, stream=stream, refresh_s=0.05)
    try:
        for _ in range(100):
            if stream.getvalue().count("tasks 0/1") >= 2:
                break
            time.sleep(0.02)
    finally:
        progress.close()
    assert stream.getvalue().count("tasks 0/1") >= 2


def test_eval_writes_plain_progress_lines_every_tenth_without_a_terminal():
    lines, clock = [], Clock()
    progress = EvalProgress(20, tty=False, clock=clock)
    task = Task(suite="s", id="add", instruction="", entry_points=[], harness="m:H")
    for i in range(20):
        clock.now += 1
        progress.judged(task, EvalResult(task_id="add", candidate_id=f"c{i}", call_ok=True, correct=i % 2 == 0),
                        lines.append)
    progress.close()
    plain = [line for line in lines if line.startswith("progress:")]
    assert len(lines) == 20 + 9 and plain[0] == "progress: judged 2/20 (1 correct, 1 tasks)  0:02, ETA 0:18"


def test_durations_and_token_counts_read_at_a_glance():
    assert format_duration(59.6) == "1:00" and format_duration(3725) == "1:02:05"
    assert [format_tokens(n) for n in (999, 1500, 12_345, 2_500_000)] == ["999", "1.5k", "12k", "2.5M"]


def test_eval_without_a_terminal_says_it_is_still_judging_when_no_verdict_comes():
    lines: list[str] = []
    progress = EvalProgress(5, tty=False, echo=lines.append, heartbeat_s=0.2)
    try:
        deadline = time.monotonic() + 10
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        progress.close()
    assert len(lines) >= 2
    assert all(line.startswith("progress: judged 0/5") and line.endswith("(judging)") for line in lines)
    count = len(lines)
    time.sleep(0.5)
    assert len(lines) == count  # closed: no more


def test_the_heartbeat_names_what_is_judged_longest_where_the_evaluator_says():
    """A slow record is visible: the progress line names it, with how long it has been judged
    (the TritonEvaluator's judging(); a verdict registers there while it is judged)."""
    from types import SimpleNamespace

    from geak_evaluator_triton.evaluator import TritonEvaluator

    judge = TritonEvaluator()
    judge._judging.update({object(): ("chunk_gla_fwd", "out.jsonl:73", time.monotonic() - 312),
                           object(): ("relu", "out.jsonl:51", time.monotonic() - 4)})
    assert [(t, c) for t, c, _ in judge.judging()] == [("chunk_gla_fwd", "out.jsonl:73"), ("relu", "out.jsonl:51")]
    lines: list[str] = []
    progress = EvalProgress(5, tty=False, echo=lines.append, heartbeat_s=0.2, evaluator=judge)
    try:
        deadline = time.monotonic() + 10
        while not lines and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        progress.close()
    assert lines and re.search(r"\(judging 2; longest: chunk_gla_fwd \[out\.jsonl:73\] for 31\d s\)$", lines[0]), lines
    # an evaluator that says nothing of it, or fails saying it: the plain line
    for evaluator in (SimpleNamespace(), SimpleNamespace(judging=lambda: 1 / 0)):
        assert EvalProgress(1, tty=False, evaluator=evaluator).judging_text() == "(judging)"
    judge.close()


def test_cut_messages_say_so_and_candidate_ids_keep_their_end():
    from geak_core.api.model import EvalResult
    from geak_core.cli.cli_eval import verdict_line
    from geak_core.engine.progress import clip, clip_left

    assert clip("short", 10) == "short" and clip("x" * 10, 10) == "x" * 10
    assert clip('ValueError("arange\'s arguments must be constexpr")', 20) == 'ValueError("arange\'\u2026'
    assert clip_left("runs/output_gpt-4o_comp.jsonl:171", 12) == "\u2026p.jsonl:171"
    task = type("T", (), {"id": "softmax"})()
    result = EvalResult(task_id="softmax", candidate_id="/a/very/long/folder/of/candidates/softmax__attempt_17.py",
                        failed_stage="run", reason="raised " + "y" * 300)
    line = verdict_line(task, result)
    assert "\u2026er/of/candidates/softmax__attempt_17.py" in line  # its end survives, not its start
    assert line.endswith("\u2026") and len(line) < 260
