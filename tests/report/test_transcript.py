"""`geak-core runs log`: every candidate's prompt, reply, extracted code and verdict."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner
from geak_core.cli import main


def _stored(run_dir):
    db = sqlite3.connect(run_dir / "store.sqlite")
    try:
        candidates = db.execute("SELECT id, task_id, code, llm_call_id FROM candidates").fetchall()
        calls = {r[0]: (json.loads(r[1]), json.loads(r[2]) if r[2] else None)
                 for r in db.execute("SELECT id, request, response FROM llm_calls")}
    finally:
        db.close()
    return candidates, calls


def test_runs_log_shows_the_prompt_and_reply_of_every_candidate_of_the_quickstart(quickstart_run):
    candidates, calls = _stored(quickstart_run)
    assert len(candidates) >= 2
    result = CliRunner().invoke(main, ["runs", "log", str(quickstart_run)])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "\x1b[" not in text  # no colour when not a terminal
    for cid, _, code, call_id in candidates:
        assert f"[{cid}]" in text
        request, response = calls[call_id]
        for message in request["messages"]:  # every prompt message, whole
            assert message["content"].rstrip() in text
        assert any(reply.rstrip() in text for reply in response["texts"])
        assert code.rstrip() in text
    assert text.count("--- verdict: ") == len(candidates)
    assert "not judged" not in text


def test_runs_log_json_and_filters(quickstart_run):
    candidates, calls = _stored(quickstart_run)
    result = CliRunner().invoke(main, ["runs", "log", str(quickstart_run), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert sorted(r["candidate_id"] for r in rows) == sorted(c[0] for c in candidates)
    for row in rows:
        assert row["messages"] and row["reply"] and row["code"] and row["verdict"] is not None
        assert row["messages"] == calls[next(c[3] for c in candidates if c[0] == row["candidate_id"])][0]["messages"]
    # in order: task, lineage, round
    keys = [(r["task_id"], r["lineage"], r["iteration"]) for r in rows]
    assert keys == sorted(keys)

    task = candidates[0][1]
    one_task = json.loads(CliRunner().invoke(main, ["runs", "log", str(quickstart_run), "--task", task,
                                                    "--json"]).output)
    assert {r["task_id"] for r in one_task} == {task} and len(one_task) == sum(c[1] == task for c in candidates)
    first = candidates[0][0]
    one = json.loads(CliRunner().invoke(main, ["runs", "log", str(quickstart_run), "--candidate", first,
                                               "--json"]).output)
    assert [r["candidate_id"] for r in one] == [first]

    unknown = CliRunner().invoke(main, ["runs", "log", str(quickstart_run), "--task", "no_such_task"])
    assert unknown.exit_code == 2 and "no candidate of task 'no_such_task'" in unknown.output
    missing = CliRunner().invoke(main, ["runs", "log", str(quickstart_run), "--candidate", "nope"])
    assert missing.exit_code == 2 and "no candidate 'nope'" in missing.output
