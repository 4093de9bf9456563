"""The command line, through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from geak_core.cli import main

from tests.support.bundled import BUNDLED_DISTRIBUTIONS


def test_every_command_has_help():
    runner = CliRunner()
    for args in (["--help"], ["run", "--help"], ["plugins", "--help"], ["recipe", "check", "--help"],
                 ["recipe", "show", "--help"], ["runs", "list", "--help"], ["runs", "show", "--help"], ["runs", "log", "--help"],
                 ["doctor", "--help"], ["suites", "--help"], ["tasks", "--help"], ["task", "show", "--help"],
                 ["corpus", "audit", "--help"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        assert "Usage:" in result.output


def test_bare_geak_core_prints_the_help_and_exits_0():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage:") and "Commands:" in result.output and "runs " in result.output


def _commands(group, path=()):
    import click

    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_no_command_summary_is_cut_short():
    """click cuts a first docstring line longer than its limit (45 characters by default, the
    terminal's width less the names in --help) and ends it with "...": each summary fits."""
    cut = [" ".join(path) for path, command in _commands(main) if command.get_short_help_str(45).endswith("...")]
    assert cut == []
    listed = CliRunner().invoke(main, ["--help"]).output.split("Commands:", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.endswith("...")] == []


def test_task_show_without_a_suite_names_the_suite_that_has_it():
    runner = CliRunner()
    result = runner.invoke(main, ["task", "show", "softmax"])
    assert result.exit_code == 2
    assert "expected SUITE/ID, got 'softmax': did you mean rocm/softmax?" in result.output
    result = runner.invoke(main, ["task", "show", "sofmax"])
    assert "did you mean rocm/softmax?" in result.output
    result = runner.invoke(main, ["task", "show", "no-such-task-anywhere"])
    assert result.exit_code == 2 and "give SUITE/ID, e.g. rocm/softmax" in result.output


def test_plugins_lists_every_bundled_distribution_without_errors():
    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert {r["distribution"] for r in rows} >= set(BUNDLED_DISTRIBUTIONS)
    assert [r["name"] for r in rows if r["error"]] == []


def test_recipe_check_reports_a_misspelt_key_and_exits_2(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[agent]\niterations = 2\nlinages = 3\n')
    result = CliRunner().invoke(main, ["recipe", "check", "--no-env", str(recipe)])
    assert result.exit_code == 2
    assert f"{recipe.resolve()}:3: [agent.linages] unknown key (did you mean 'lineages'?)" in result.output


def test_missing_recipe_file_is_bad_input(tmp_path):
    result = CliRunner().invoke(main, ["recipe", "check", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "no such recipe" in result.output


def test_runs_list_on_an_empty_folder(tmp_path):
    result = CliRunner().invoke(main, ["runs", "list", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0 and "no runs" in result.output


def test_runs_list_keeps_its_columns_in_line_whatever_the_length_of_the_ids(tmp_path):
    from geak_core.engine.store import RunStore

    for name, calls, status in (("a", 3, "finished"), ("a-much-longer-name-of-an-ablation-variant", 12, "failed")):
        with RunStore.create(tmp_path, name, "", {}) as store:
            store.set_meta("status", status)
            for index in range(calls):
                store.record_llm_call(call_id=f"c{index}", key=f"k{index}", call_key=None, backend="b",
                                      identity={}, request={}, response={}, error=None, latency_s=0.0)
    result = CliRunner().invoke(main, ["runs", "list", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split() == ["run", "status", "calls", "candidates", "evaluations"]
    assert [row.split()[1:3] for row in rows] == [["finished", "3"], ["failed", "12"]]
    status_at = header.index("status")  # text columns start under their heading
    assert all(row[status_at - 2:status_at] == "  " and row[status_at] != " " for row in rows), rows
    assert len({len(line) for line in (header, *rows)}) == 1, result.output  # counts end under theirs


def test_runs_show_unknown_run_is_bad_input(tmp_path):
    result = CliRunner().invoke(main, ["runs", "show", "nope", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2 and "no run 'nope'" in result.output


def test_tasks_and_task_show_describe_the_rocm_suite():
    runner = CliRunner()
    listing = runner.invoke(main, ["tasks", "rocm"])
    assert listing.exit_code == 0 and "test_add_kernel" in listing.output
    shown = runner.invoke(main, ["task", "show", "rocm/test_add_kernel"])
    assert shown.exit_code == 0
    assert "add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr)" in shown.output
    unknown = runner.invoke(main, ["task", "show", "rocm/test_add_kernal"])
    assert unknown.exit_code == 2 and "did you mean 'test_add_kernel'" in unknown.output


def test_doctor_reports_interpreter_mode_without_a_gpu():
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0
    assert "torch" in result.output and "triton" in result.output


def test_doctor_says_which_confinement_the_judges_children_get():
    from geak_core.kit.confinement import landlock_abi
    from geak_core.kit.sandbox import namespaces_available

    output = CliRunner().invoke(main, ["doctor"]).output
    abi = landlock_abi()
    assert (f"confinement Landlock ABI {abi}" if abi else "confinement unavailable") in output
    assert ("namespaces available" if namespaces_available() else "namespaces unavailable") in output
    assert "environment by allow-list" in output


def test_console_script_runs_as_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "geak_core.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "geak-core" in out.stdout


ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "recipes" / "quickstart.toml"


def _quickstart_elsewhere() -> str:
    """The quickstart recipe's text with its script path made absolute (to be written elsewhere)."""
    return QUICKSTART.read_text().replace('source = "quickstart/script.toml"',
                                          f'source = "{QUICKSTART.parent / "quickstart" / "script.toml"}"')


def test_recipe_check_refuses_an_unknown_task_and_a_missing_replay_script(tmp_path):
    text = _quickstart_elsewhere()
    unknown = tmp_path / "unknown.toml"
    unknown.write_text(text.replace('tasks = ["test_add_kernel", "softmax"]', 'tasks = ["test_add_kernel", "sofmax"]'))
    result = CliRunner().invoke(main, ["recipe", "check", "--no-env", str(unknown)])
    assert result.exit_code == 2, result.output
    assert "[suite.tasks] unknown task 'sofmax' of suite 'rocm' (did you mean 'softmax'?)" in result.output

    missing = tmp_path / "missing.toml"
    missing.write_text(text.replace(str(QUICKSTART.parent / "quickstart" / "script.toml"), "no-such-script.toml"))
    result = CliRunner().invoke(main, ["recipe", "check", "--no-env", str(missing)])
    assert result.exit_code == 2, result.output
    assert f"[llm.source] no such file or folder: {tmp_path / 'no-such-script.toml'}" in result.output

    ok = tmp_path / "ok.toml"
    ok.write_text(text)
    result = CliRunner().invoke(main, ["recipe", "check", "--no-env", str(ok)])
    assert result.exit_code == 0 and "2 tasks" in result.output, result.output


def test_a_run_whose_recipe_names_an_unknown_task_leaves_no_run_folder(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text(_quickstart_elsewhere().replace('"softmax"]', '"no_such_task"]'))
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", str(recipe), "--output-dir", str(runs)])
    assert result.exit_code == 2, result.output
    assert "unknown task 'no_such_task'" in result.output
    assert not runs.exists() or not any(runs.iterdir())


def test_sigusr1_prints_every_threads_stack_to_stderr():
    """A stalled command says what it waits on: ``kill -USR1`` dumps every thread's stack."""
    import signal
    import subprocess
    import sys
    import time

    script = ("import threading, time\n"
              "from geak_core.cli import _stacks_on_sigusr1\n"
              "_stacks_on_sigusr1()\n"
              "def waiting_helper():\n    time.sleep(60)\n"
              "threading.Thread(target=waiting_helper, daemon=True).start()\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        child.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        assert child.poll() is None  # still running: the dump does not end it
    finally:
        child.kill()
        _, err = child.communicate(timeout=30)
    assert err.count("hread 0x") >= 2 and "in waiting_helper" in err and "in <module>" in err, err[-2000:]


def test_a_run_whose_process_is_gone_shows_as_interrupted_and_a_failed_run_says_why(tmp_path):
    import time

    from geak_core.engine.store import STALE_AFTER_S, RunStore, list_runs, owner_record

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    runs = tmp_path / "runs"
    killed = RunStore.create(runs, "killed", "", {})
    killed.set_meta("status", "running")
    killed.set_meta("owner", {**owner_record(), "pid": gone.pid, "pid_started": None})
    alive = RunStore.create(runs, "alive", "", {})
    alive.set_meta("status", "running")
    alive.set_meta("owner", owner_record())  # this process: still running
    failed = RunStore.create(runs, "failed", "", {})
    failed.set_meta("status", "failed")
    failed.set_meta("failure", "the suite 'rocm' has no task 'nope'")
    reused = RunStore.create(runs, "reused", "", {})
    reused.set_meta("status", "running")
    reused.set_meta("owner", {**owner_record(), "pid_started": -1})  # the pid now names another process
    # On another host the pid means nothing: a heartbeat within STALE_AFTER_S is running, an
    # older one interrupted (its machine went away, say).
    elsewhere = {**owner_record(), "host": "another-host"}
    beating = RunStore.create(runs, "beating", "", {})
    beating.set_meta("status", "running")
    beating.set_meta("owner", elsewhere)
    beating.set_meta("heartbeat", time.time() - 20)
    silent = RunStore.create(runs, "silent", "", {})
    silent.set_meta("status", "running")
    silent.set_meta("owner", elsewhere)
    silent.set_meta("heartbeat", time.time() - STALE_AFTER_S - 1)
    for store in (killed, alive, failed, reused, beating, silent):
        store.close()
    status = {row["name"]: row["status"] for row in list_runs(runs)}
    assert status["killed"] == "interrupted" and status["alive"] == "running"
    assert status["beating"] == "running" and status["silent"] == "interrupted"
    assert status["failed"] == "failed"
    if Path("/proc/self/stat").exists():
        assert status["reused"] == "interrupted"
    shown = CliRunner().invoke(main, ["runs", "show", killed.dir.name, "--output-dir", str(runs)])
    assert shown.exit_code == 0 and "[interrupted]" in shown.output
    assert f"--resume {killed.dir}" in shown.output  # the folder: works whatever --output-dir
    shown = CliRunner().invoke(main, ["runs", "show", failed.dir.name, "--output-dir", str(runs)])
    assert "failed: the suite 'rocm' has no task 'nope'" in shown.output


def test_ctrl_c_exits_130_with_a_resume_hint_that_works_verbatim_with_output_dir(tmp_path):
    """SIGINT mid-run: exit 130, the run marked interrupted, and the printed hint (the run's
    folder, so --output-dir need not be repeated) resumes it to the end."""
    import os
    import shlex
    import signal
    import time

    from geak_core.engine.store import list_runs

    out = tmp_path / "elsewhere"
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    proc = subprocess.Popen([sys.executable, "-m", "geak_core.cli", "run", str(QUICKSTART), "--output-dir", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "generate ->" in line:  # a first verdict: the run is under way
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    text = "".join(lines) + rest
    assert proc.returncode == 130, text
    hint = next(line for line in text.splitlines() if line.startswith("interrupted; resume with: "))
    assert [row["status"] for row in list_runs(out)] == ["interrupted"]
    command = shlex.split(hint.split(": ", 1)[1])
    assert command[:2] == ["geak-core", "run"]
    again = subprocess.run([sys.executable, "-m", "geak_core.cli", *command[1:]], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming run" in again.stdout and "execution accuracy 100.00%" in again.stdout
    assert [row["status"] for row in list_runs(out)] == ["finished"]


def test_run_set_and_limit_change_the_work_a_dry_run_lists(tmp_path):
    recipe = tmp_path / "quickstart.toml"
    recipe.write_text(_quickstart_elsewhere())
    plain = CliRunner().invoke(main, ["run", str(recipe), "--dry-run"])
    assert plain.exit_code == 0, plain.output
    assert "tasks: 2 x 1 lineages x up to 3 rounds" in plain.output
    changed = CliRunner().invoke(main, ["run", str(recipe), "--dry-run", "--set", "agent.iterations=5",
                                        "--set", "agent.lineages=2", "--limit", "1"])
    assert changed.exit_code == 0, changed.output
    assert "tasks: 1 x 2 lineages x up to 5 rounds" in changed.output
    bad = CliRunner().invoke(main, ["run", str(recipe), "--dry-run", "--set", "agent.lineages=-"])
    assert bad.exit_code == 2 and "--set agent.lineages=-: [agent.lineages]" in bad.output


def test_commands_that_show_data_print_json_with_json(tmp_path):
    """suites, task show, doctor and compare have --json (stdout), as plugins, tasks and runs do."""
    from geak_core.api.model import RunSummary
    from geak_core.engine.store import SUMMARY_FILE, RunStore

    suites = json.loads(CliRunner().invoke(main, ["suites", "--json"]).output)
    assert {"rocm", "tritonbench"} <= {s["name"] for s in suites} and all(s["description"] for s in suites)
    task = json.loads(CliRunner().invoke(main, ["task", "show", "rocm/test_add_kernel", "--json"]).output)
    assert task["key"] == "rocm/test_add_kernel" and task["instruction"] and task["entry_points"]
    doctor = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    assert doctor["mode"] == "cpu-interpreter" and doctor["triton"] and len(doctor["sandbox"]) == 4
    assert doctor["backends"]["replay"] == "no key needed" and doctor["plugin_errors"] == {}
    store = RunStore.create(tmp_path, "done", "", {})
    store.write_json(SUMMARY_FILE, RunSummary(run_id=store.dir.name, status="finished").to_dict())
    store.close()
    rows = json.loads(CliRunner().invoke(main, ["compare", store.dir.name, "--output-dir", str(tmp_path),
                                                "--json"]).output)
    assert [r["run_id"] for r in rows] == [store.dir.name] and rows[0]["summary"]["run_id"] == store.dir.name


def test_old_spellings_of_file_options_stop_with_an_error_naming_the_new_one(tmp_path):
    """--json prints JSON on stdout everywhere; files are written with -o/--out."""
    from geak_core.cli.cli_options import old_spelling

    assert old_spelling(["r.toml", "--json", "s.json"], {}) == (
        "--json takes no file any more: alone it prints JSON on stdout; write the file with -o/--out s.json")
    assert "-o/--out v.jsonl" in old_spelling(["--json=v.jsonl"], {})
    assert old_spelling(["r.toml", "--json"], {}) == ""  # the flag
    assert old_spelling(["--json", "candidates/"], {}) == ""  # a flag, then a folder to judge
    assert old_spelling(["--", "--json", "s.json"], {}) == ""
    assert old_spelling(["run1", "--output", "r.html"], {"--output": "-o/--out"}) == "--output is now -o/--out"
    assert old_spelling(["run1", "--output-dir", "runs"], {"--output": "-o/--out"}) == ""

    recipe = tmp_path / "r.toml"
    recipe.write_text(_quickstart_elsewhere())
    for args, new in ((["run", str(recipe), "--json", str(tmp_path / "s.json")], "-o/--out"),
                      (["ablation", str(recipe), "--json", str(tmp_path / "a.json")], "-o/--out"),
                      (["eval", str(tmp_path), "--json", str(tmp_path / "v.jsonl")], "-o/--out"),
                      (["report", "some-run", "--output", str(tmp_path / "r.html")], "--output is now -o/--out")):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert new in result.output, result.output
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "runs").exists()


def test_run_json_prints_the_summary_alone_on_stdout_and_out_writes_it(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, "-m", "geak_core.cli", "run", str(ROOT / "recipes" / "ablations" / "0-direct.toml"),
         "--output-dir", str(tmp_path / "runs"), "--json", "-o", str(out)],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if "KEY" not in k},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = json.loads(proc.stdout)  # nothing else on stdout
    assert printed == json.loads(out.read_text())
    assert printed["status"] == "finished" and printed["run_id"]
    assert printed["scripted"] is True  # the replay backend: the summary says its replies are scripted
    assert "run stored in" in proc.stderr  # the progress went to stderr


def test_a_running_run_records_a_heartbeat_until_it_ends(tmp_path):
    import time

    from geak_core.engine.store import Heartbeat, RunStore

    store = RunStore.create(tmp_path, "beat", "", {})
    heartbeat = Heartbeat(store, every_s=0.05).start()
    first = store.meta("heartbeat")
    time.sleep(0.3)
    later = store.meta("heartbeat")
    heartbeat.stop()
    stopped = store.meta("heartbeat")
    time.sleep(0.2)
    assert first <= later - 0.1 and store.meta("heartbeat") == stopped
    store.close()
