"""``geak-core eval``: candidates from files, folders and JSONL; a summary; atomic JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from geak_core.api.model import EvalResult
from geak_core.cli.cli_eval import eval_command, summarize, summary_lines
from geak_core.kit.code_metrics import code_metrics
from judge_support import ADD_HANGS_IN_LAUNCH, CHEATS, FIXTURES

pytestmark = pytest.mark.slow

REFERENCES = FIXTURES / "minisuite" / "references"


@pytest.fixture
def mini_cli(monkeypatch):
    """The CLI's plugin manager with the mini suite registered; the judge under the interpreter."""
    import minisuite
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    reset_plugin_manager(PluginManager(extra_plugins=[("minisuite", minisuite)]))
    runner = CliRunner()

    def invoke(*args: str):
        base = ["--suite", "mini", "--mode", "interpreter", "--workers", "2",
                "--pythonpath", str(FIXTURES), "--seeds", "0"]
        return runner.invoke(eval_command, [*base, *args], catch_exceptions=False)

    return invoke


def test_files_a_folder_and_jsonl_records_are_judged_into_one_json_report(mini_cli, tmp_path):
    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__honest.py").write_text((REFERENCES / "add.py").read_text())
    (folder / "add__unwritten.py").write_text((CHEATS / "add_unwritten.py").read_text())
    records = tmp_path / "replies.jsonl"
    reply = "Here you go:\n```python\n" + (REFERENCES / "scale.py").read_text() + "```\n"
    records.write_text("\n".join(json.dumps(r) for r in [
        {"task_id": "scale", "predict": reply, "id": "reply-1"},
        {"task": "scale", "predict": "Sorry, I cannot help with that.", "id": "reply-2"},
        {"task": "scale", "file": str(CHEATS / "scale_torch_compute.py"), "id": "reply-3"},
    ]) + "\n")
    out = tmp_path / "report.json"
    result = mini_cli(str(folder), "--candidates", str(records), "--out", str(out), "-k", "1", "-k", "2")
    assert result.exit_code == 0, result.output
    report = {r["candidate"]: r for r in json.loads(out.read_text())}
    assert len(report) == 5
    assert report[str(folder / "add__honest.py")]["correct"] is True
    assert report[str(folder / "add__unwritten.py")]["failed_stage"] == "stage1"
    assert report["reply-1"]["correct"] is True
    assert report["reply-2"]["failed_stage"] == "extract"
    assert report["reply-3"]["failed_stage"] == "anticheat"
    honest = report[str(folder / "add__honest.py")]
    assert honest["speedup"] is None and honest["shapes"][0]["candidate_ms"] is None
    # where the judge's time went, per verdict (docs/evaluator.md lists the phases)
    assert {"static", "reference", "candidate"} <= set(honest["phases"])
    assert all(isinstance(s, float) and s >= 0 for s in honest["phases"].values())
    assert 0 < honest["phases"]["candidate"] <= honest["wall_s"]
    assert "call accuracy 80.0%  execution accuracy 40.0%" in result.output
    assert "pass@1 41.7%" in result.output  # add: 1 of 2 correct; scale: 1 of 3
    assert "pass@2 83.3%" in result.output
    # per task: correct of its candidates, and the best correct one's speedups and code metrics
    table = {line.split()[0]: line.split() for line in result.output.splitlines()
             if len(line.split()) == 10 and "/" in line.split()[5]}
    add, scale = code_metrics((REFERENCES / "add.py").read_text()), code_metrics((REFERENCES / "scale.py").read_text())
    assert table["add"][3:] == ["yes", "yes", "1/2", "n/m", "n/m", f"{add.cc_mean:.1f}",
                                f"{add.maintainability_index:.1f}"]
    assert table["scale"][5:] == ["1/3", "n/m", "n/m", f"{scale.cc_mean:.1f}", f"{scale.maintainability_index:.1f}"]
    # the headline aggregate is named beside the mean (none timed here), and every record
    # keeps all three aggregates beside it
    assert "mean speedup n/m (mean_ratio)  mean speedup against PyTorch eager n/m" in result.output
    assert honest["speedup_method"] == "mean_ratio"
    assert {"speedup_sum", "speedup_geomean", "speedup_mean_ratio"} <= set(honest)
    assert not list(tmp_path.glob(".geak-eval-*")), "no temporary file is left behind"


def test_a_record_without_a_task_is_resolved_by_the_suite(mini_cli, tmp_path):
    label = (REFERENCES / "add.py").read_text()
    records = tmp_path / "labelled.jsonl"
    records.write_text(json.dumps({"label": label, "predict": f"```python\n{label}```", "id": "r"}) + "\n")
    out = tmp_path / "out.jsonl"
    result = mini_cli("--candidates", str(records), "--out", str(out))
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["task"] == "add" and record["correct"]
    records.write_text(json.dumps({"label": "something else", "predict": "x"}) + "\n")
    result = mini_cli("--candidates", str(records))
    assert result.exit_code == 2 and "cannot tell it from the record" in result.output


def test_a_single_file_needs_its_task(mini_cli, tmp_path):
    candidate = tmp_path / "mine.py"
    candidate.write_text((REFERENCES / "add.py").read_text())
    result = mini_cli(str(candidate))
    assert result.exit_code == 2
    assert "has no task 'mine'" in result.output
    result = mini_cli("--task", "add", str(candidate))
    assert result.exit_code == 0, result.output
    assert "correct" in result.output


def test_unknown_suite_and_task_names_get_a_suggestion_and_exit_2(mini_cli, tmp_path):
    candidate = tmp_path / "add.py"
    candidate.write_text("x = 1\n")
    runner = CliRunner()
    result = runner.invoke(eval_command, ["--suite", "minii", str(candidate)])
    assert result.exit_code == 2 and "did you mean 'mini'" in result.output
    result = mini_cli("--task", "ad", str(candidate))
    assert result.exit_code == 2 and "did you mean 'add'" in result.output


def test_malformed_input_is_located(mini_cli, tmp_path):
    records = tmp_path / "bad.jsonl"
    records.write_text('{"task": "add", "code": "x = 1"}\nnot json\n')
    result = mini_cli("--candidates", str(records))
    assert result.exit_code == 2
    assert f"{records}:2: not valid JSON" in result.output
    result = mini_cli(str(tmp_path / "missing.py"))
    assert result.exit_code == 2 and "no such file or directory" in result.output
    binary = tmp_path / "add.py"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    result = mini_cli("--task", "add", str(binary))
    assert result.exit_code == 2
    assert f"{binary}: not a text file (byte 8 is no UTF-8" in result.output
    assert "codec" not in result.output  # not the decoder's own text


def test_the_summary_counts_pass_at_k_per_task_and_leaves_out_skips():
    from geak_core.api.tasks import EntryPoint, Task

    def task(name):
        return Task(suite="s", id=name, instruction="", entry_points=[EntryPoint("k")], harness="m:C")

    a, b = task("a"), task("b")
    pairs = [
        (a, EvalResult("a", "1", call_ok=True, correct=True, speedup=2.0, speedup_vs_eager=5.0)),
        (a, EvalResult("a", "2", call_ok=True, correct=False)),
        (b, EvalResult("b", "3", call_ok=False)),
        (b, EvalResult("b", "4", call_ok=True, correct=True, speedup=1.0)),
        (b, EvalResult("b", "5", flags=["skipped"])),
        (b, EvalResult("b", "6", flags=["judge_error", "reference_failed"], reason="judge error: the reference")),
        (b, EvalResult("b", "7", flags=["judge_error"], reason="internal judge error: KeyError")),
        (b, EvalResult("b", "8", flags=["skipped", "unusable_task"])),
    ]
    code = (REFERENCES / "add.py").read_text()
    summary = summarize(pairs, [1, 2, 3], codes={"1": code})
    assert summary["judged"] == 4 and summary["skipped"] == 2 and summary["judge_errors"] == 2
    assert summary["call_accuracy"] == 0.75 and summary["execution_accuracy"] == 0.5
    assert summary["mean_speedup"] == 1.5
    assert summary["geomean_speedup"] == pytest.approx(2 ** 0.5)
    assert [(u["candidate"], u["kind"]) for u in summary["undecided"]] == [
        ("5", "skipped"), ("6", "reference_failed"), ("7", "judge_error"), ("8", "unusable_task")]
    assert summary["undecided"][1]["reason"] == "judge error: the reference"
    text = "\n".join(summary_lines(summary))
    assert "undecided 4:" in text and "1 x reference_failed: judge error: the reference" in text
    assert summary["mean_speedup_vs_eager"] == 5.0
    untimed = summarize([(a, EvalResult("a", "9", call_ok=True, correct=True))], [1])
    line = next(x for x in summary_lines(untimed) if x.startswith("call accuracy"))
    assert "mean speedup n/m (mean_ratio)  mean speedup against PyTorch eager n/m" in line  # as the tables say
    assert summary["pass_at_k"] == {"1": 0.5, "2": 1.0}
    per_task = {t["task_id"]: t for t in summary["per_task"]}
    assert per_task["a"]["best_candidate_id"] == "1" and per_task["a"]["best_speedup_vs_eager"] == 5.0
    assert per_task["a"]["best_metrics"] == code_metrics(code).to_dict()
    assert (per_task["b"]["correct_lineages"], per_task["b"]["lineages"]) == (1, 2)  # the skip left out
    assert per_task["b"]["best_metrics"] == {}  # no code given for it


def test_the_command_is_wired_into_the_main_cli():
    from geak_core.cli import main

    assert "eval" in main.commands


def test_the_report_json_path_written_is_complete_json(tmp_path):
    from geak_core.engine.store import atomic_write

    target = tmp_path / "sub" / "r.json"
    atomic_write(str(target), "[1, 2]\n")
    assert json.loads(target.read_text()) == [1, 2]
    assert [p.name for p in Path(target.parent).iterdir()] == ["r.json"]


def test_each_verdict_is_printed_and_written_to_the_json_as_it_arrives(mini_cli, tmp_path, monkeypatch):
    import geak_core.cli.cli_eval as cli_eval

    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__a.py").write_text((REFERENCES / "add.py").read_text())
    (folder / "add__b.py").write_text((CHEATS / "add_unwritten.py").read_text())
    out = tmp_path / "report.jsonl"
    seen: list[int] = []
    real = cli_eval.RecordFile.write

    def spy(self):
        real(self)
        seen.append(len(Path(self.path).read_text().splitlines()))  # what a reader would find now

    monkeypatch.setattr(cli_eval.RecordFile, "write", spy)
    result = mini_cli(str(folder), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert seen[:2] == [1, 2]  # one complete file after the first verdict, then after the second
    assert len(out.read_text().splitlines()) == 2


@pytest.mark.parametrize("name", ["out.jsonl", "out.json"])
def test_the_journal_encodes_each_record_once_and_lays_the_file_out_as_json_does(tmp_path, monkeypatch, name):
    """-o is rewritten after every verdict; the records before are not encoded again, and the
    file is byte for byte one JSON object a line (.jsonl) or json.dumps(records, indent=2)."""
    import json as json_module

    import geak_core.cli.cli_eval as cli_eval

    def layout(records):
        if name.endswith(".jsonl"):
            return "".join(json_module.dumps(r) + "\n" for r in records)
        return json_module.dumps(records, indent=2) + "\n"

    records = [{"task": f"t{i}", "speedup": i / 3, "flags": ["a", "b"], "shapes": [{"case": "x"}]}
               for i in range(4)]
    journal = cli_eval.RecordFile(str(tmp_path / name))
    journal.write()
    assert (tmp_path / name).read_text() == layout([])
    encoded: list[object] = []
    real = json_module.dumps
    monkeypatch.setattr(cli_eval.json, "dumps", lambda obj, **kw: encoded.append(obj) or real(obj, **kw))
    for record in records:
        journal.add(record)
        journal.write()
    assert encoded == records  # each once
    monkeypatch.undo()
    assert (tmp_path / name).read_text() == layout(records)


def test_a_hung_candidate_holds_up_no_verdict_when_stdout_is_a_pipe(tmp_path):
    """Five quick candidates and one that never ends (stuck before its kernel compiles, as a
    hung ``ptxas`` leaves a child: waiting, not computing), two slots, --timeout 20: the quick
    verdicts are printed (to a pipe, line by line) as they come, most of them before the hung
    one's, all within 60 s. A hang that spins a core instead leaves the quick ones one core of
    the machine's two for those 20 s, and under load they do not finish in time. (Which quick
    verdict comes last depends on the machine's load: the slot the hung one frees may take it.)"""
    import subprocess
    import sys
    import time

    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__0hangs.py").write_text(ADD_HANGS_IN_LAUNCH)
    for i in range(5):
        (folder / f"add__quick{i}.py").write_text((REFERENCES / "add.py").read_text() + f"\n# copy {i}\n")
    script = (
        "import sys, minisuite\n"
        "from geak_core.engine.plugins import PluginManager, reset_plugin_manager\n"
        "reset_plugin_manager(PluginManager(extra_plugins=[('minisuite', minisuite)]))\n"
        "from geak_core.cli.cli_eval import eval_command\n"
        "eval_command(sys.argv[1:])\n"
    )
    args = ["--suite", "mini", "--mode", "interpreter", "--workers", "2", "--pythonpath", str(FIXTURES),
            "--seeds", "0", "--timeout", "20", str(folder)]
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(FIXTURES)})
    seen = []
    for line in proc.stdout:  # verdict lines: "<task> <candidate> correct|wrong (...)|failed (...)"
        if line.startswith("add ") and "add__" in line:
            seen.append((time.monotonic() - began, line.strip()))
    proc.wait(timeout=90)
    elapsed = time.monotonic() - began
    assert proc.returncode == 0, seen
    assert elapsed < 60, elapsed
    names = [line for _, line in seen]
    hung = [i for i, line in enumerate(names) if "0hangs" in line]
    assert len(names) == 6 and len(hung) == 1 and hung[0] >= 3, seen
    assert "timed out" in names[hung[0]], names[hung[0]]
    first_quick, hung_at = seen[0][0], seen[hung[0]][0]
    assert first_quick < 20 <= hung_at, seen  # a quick verdict waits for no hung one to end


def test_eval_through_the_console_script_leaves_every_output_whole(tmp_path):
    """``geak-core eval`` over a folder as the console script runs it (``entry``), stdout a
    block-buffered pipe: the process leaves through ``os._exit`` (an exit handler registered
    before the command's is never reached: ``cli_exit``), status 0, every verdict line, the
    summary and the last line on stdout, every record in -o/--out."""
    import os
    import subprocess
    import sys

    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__honest.py").write_text((REFERENCES / "add.py").read_text())
    (folder / "add__unwritten.py").write_text((CHEATS / "add_unwritten.py").read_text())
    out = tmp_path / "verdicts.jsonl"
    script = (
        "import atexit, sys, minisuite\n"
        "atexit.register(lambda: print('finalized by Python', file=sys.stderr))\n"
        "from geak_core.engine.plugins import PluginManager, reset_plugin_manager\n"
        "reset_plugin_manager(PluginManager(extra_plugins=[('minisuite', minisuite)]))\n"
        "from geak_core.cli import entry\n"
        "entry()\n"
    )
    args = ["eval", "--suite", "mini", "--mode", "interpreter", "--workers", "2", "--pythonpath", str(FIXTURES),
            "--seeds", "0", str(folder), "-o", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": os.pathsep.join([str(FIXTURES), *sys.path])})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("add ") and "add__" in line for line in lines) == 2, proc.stdout
    assert "call accuracy 100.0%  execution accuracy 50.0%" in proc.stdout
    assert lines[-1] == f"wrote 2 records to {out}"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["correct"] for r in records) == [False, True]
    assert "finalized by Python" not in proc.stderr


def test_ctrl_c_stops_eval_at_once_with_a_candidate_in_flight(tmp_path):
    """SIGINT while a candidate hangs (its child in a process group of its own, which the
    terminal's Ctrl-C never reaches): the judge kills it and exits 130 at once, not when the
    candidate's 90 s budget runs out."""
    import signal
    import subprocess
    import sys
    import time

    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__hangs.py").write_text(ADD_HANGS_IN_LAUNCH)
    script = (
        "import sys, minisuite\n"
        "from geak_core.engine.plugins import PluginManager, reset_plugin_manager\n"
        "reset_plugin_manager(PluginManager(extra_plugins=[('minisuite', minisuite)]))\n"
        "from geak_core.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    args = ["eval", "--suite", "mini", "--mode", "interpreter", "--workers", "1", "--pythonpath", str(FIXTURES),
            "--seeds", "0", "--timeout", "90", str(folder)]
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(FIXTURES)})
    time.sleep(12)  # the candidate's child is up and stuck in its launch
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert time.monotonic() - sent < 30, out
    assert "stopped (Ctrl-C)" in out


def test_resume_keeps_the_verdicts_in_the_json_and_judges_only_the_rest(mini_cli, tmp_path, monkeypatch):
    import geak_core.cli.cli_eval as cli_eval

    folder = tmp_path / "cands"
    folder.mkdir()
    (folder / "add__a.py").write_text((REFERENCES / "add.py").read_text())
    (folder / "add__b.py").write_text((CHEATS / "add_unwritten.py").read_text())
    out = tmp_path / "report.jsonl"
    first = mini_cli(str(folder), "--out", str(out))
    assert first.exit_code == 0, first.output
    before = [json.loads(line) for line in out.read_text().splitlines()]
    # A run stopped half-way: the second verdict never written, a line cut short after it.
    out.write_text(json.dumps(before[0]) + "\n" + '{"task": "add", "cand')
    judged: list[str] = []
    real = cli_eval.build_evaluator

    def counting(*args, **kwargs):
        evaluator = real(*args, **kwargs)
        many = evaluator.evaluate_many

        def spy(jobs):
            judged.extend(job.candidate.id for job in jobs)
            return many(jobs)

        evaluator.evaluate_many = spy
        return evaluator

    monkeypatch.setattr(cli_eval, "build_evaluator", counting)
    again = mini_cli(str(folder), "--out", str(out), "--resume")
    assert again.exit_code == 0, again.output
    assert judged == [before[1]["candidate"]]  # only the one missing
    after = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["candidate"] for r in after] == [r["candidate"] for r in before]
    assert after[0] == before[0]  # kept as it was
    assert [r["correct"] for r in after] == [r["correct"] for r in before]
    assert "1 verdicts kept, 1 to judge" in again.output

    refused = mini_cli(str(folder), "--resume")
    assert refused.exit_code == 2 and "--resume needs -o/--out" in refused.output
