"""The sandbox: a fresh process group, a scrubbed environment, a private directory, a pipe."""

from __future__ import annotations

import os
import time

import pytest
from geak_core.kit.sandbox import namespaces_available, run_sandboxed, scrub_env


def run(entry, args=None, **kwargs):
    from judge_support import FIXTURES

    kwargs.setdefault("timeout_s", 30)
    kwargs.setdefault("sys_path", [str(FIXTURES)])
    return run_sandboxed(f"minisuite.probes:{entry}", args, **kwargs)


def test_scrubbing_drops_credentials_provider_variables_and_python_settings():
    env = {
        "OPENAI_API_KEY": "x", "MY_SERVICE_TOKEN": "x", "DB_PASSWORD": "x", "AWS_REGION": "x",
        "ANTHROPIC_BASE": "x", "GITHUB_USER": "x", "HF_HOME": "x", "SOME_AUTH_HEADER": "x",
        "DATABASE_URL": "postgres://u:p@host/db", "PYTHONPATH": "/x", "PATH": "/bin",
        "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0", "TRITON_CACHE_DIR": "/c",
        "DOCS_URL": "https://example.org/docs",
    }
    assert scrub_env(env) == {"PATH": "/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0",
                              "TRITON_CACHE_DIR": "/c", "DOCS_URL": "https://example.org/docs"}


def test_the_child_gets_its_own_group_a_private_dir_and_a_scrubbed_environment(monkeypatch):
    monkeypatch.setenv("GEAK_TEST_SECRET_KEY", "hunter2")
    monkeypatch.setenv("GEAK_TEST_PLAIN", "visible")
    result = run("describe", {"x": 1}, env={"EXTRA": "1", "GEAK_TEST_PLAIN": None})
    seen = result.returned
    assert result.returncode == 0 and result.completed
    assert seen["args"] == {"x": 1}
    assert seen["pgid_is_pid"]
    assert seen["cwd"] == seen["tmpdir"] and os.path.basename(seen["cwd"]).startswith("geak-sbx-")
    assert not os.path.exists(seen["cwd"]), "the private directory is removed afterwards"
    assert "GEAK_TEST_SECRET_KEY" not in seen["env"] and "GEAK_TEST_PLAIN" not in seen["env"]
    assert seen["env"]["EXTRA"] == "1"
    assert "hunter2" not in repr(seen["env"])
    assert len(seen["fds"]) <= 5  # stdin, stdout, stderr, the result pipe, the listing itself


def test_frames_arrive_in_order_and_the_judge_can_answer_them():
    def answer(message, replier):
        if message == {"kind": "ready"}:
            replier.send({"plan": [1, 2]})

    result = run("handshake", on_message=answer)
    assert result.messages[0] == {"kind": "ready"}
    assert result.returned == {"plan": [1, 2]}


def test_time_the_judge_keeps_the_child_waiting_is_not_charged_even_while_it_lasts():
    def answer(message, replier):
        if message == {"kind": "ready"}:
            with replier.judge_waiting():  # e.g. waiting for the device, longer than the timeout
                time.sleep(3.0)
            replier.send({"plan": [1]})

    result = run("handshake", on_message=answer, timeout_s=2)
    assert not result.timed_out and result.returned == {"plan": [1]}
    assert result.waited_s >= 3.0


def test_a_timeout_kills_the_whole_process_group():
    started = time.monotonic()
    result = run("spawn_and_hang", timeout_s=3)
    assert result.timed_out and not result.completed
    assert "timed out after" in result.describe_exit()
    assert time.monotonic() - started < 20
    grandchild = result.messages[0]["grandchild"]
    time.sleep(0.2)
    with open(f"/proc/{grandchild}/stat") as handle:
        state = handle.read().split(")")[-1].split()[0] if os.path.exists(f"/proc/{grandchild}") else "gone"
    assert state in ("Z", "X", "gone")


def test_a_budget_set_once_the_judge_knows_more_replaces_the_timeout_and_is_named():
    started = time.monotonic()

    def budget(message, replier):  # e.g. the task's reference has run: the candidate's budget
        replier.set_limit(2.0, "its budget: 20 x the reference's 0.1 s")

    result = run("spawn_and_hang", on_message=budget, timeout_s=60)
    assert result.timed_out and time.monotonic() - started < 20
    assert "its budget: 20 x the reference's 0.1 s" in result.describe_exit()


def test_a_crash_is_described_by_its_signal():
    result = run("crash")
    assert result.signal_name == "SIGSEGV"
    assert result.describe_exit() == "crashed with SIGSEGV"
    assert "Fatal Python error" in result.stderr


def test_an_exception_in_the_child_is_an_exit_status_with_the_traceback_on_stderr():
    result = run("fail")
    assert result.returncode == 70 and not result.completed
    assert "RuntimeError: probe failure" in result.stderr


def test_captured_output_keeps_only_a_head_and_a_tail():
    result = run("chatty", {"bytes": 1_000_000}, output_limit=1000)
    assert len(result.stdout) < 1200
    assert result.stdout.startswith("A") and result.stdout.endswith("END")
    assert "bytes dropped" in result.stdout


def test_an_oversized_result_stream_is_cut_off():
    result = run("stream", {"count": 10_000}, result_limit=10_000)
    assert result.channel_error == "result exceeded 10000 bytes"
    assert len(result.messages) < 10_000


def test_frames_the_judge_digests_do_not_count_against_the_limit_but_each_frame_does():
    """A big task's candidate sends its outputs case after case for the judge to compare and
    drop: their sum may pass the limit (KernelBench-X's fused_relu_max_pool2d_conv2d and
    adaptive_avg_pool2d passed 16 GiB on an H200 and were cut while timed); one frame may not."""
    digested = run("stream", {"count": 2_000}, result_limit=10_000,
                   on_message=lambda message, replier: {"digest": message["i"]}
                   if isinstance(message, dict) and "i" in message else None)
    assert digested.channel_error is None and digested.completed
    assert [m["digest"] for m in digested.messages if "digest" in m] == list(range(2_000))
    big = run("stream_big", {"bytes": 50_000}, result_limit=10_000,
              on_message=lambda message, replier: {"digest": True}
              if isinstance(message, dict) and "blob" in message else None)
    assert big.channel_error is not None and big.channel_error.startswith("a result frame of")
    assert not big.completed


def test_the_judge_puts_every_thread_and_process_of_a_child_on_chosen_cpus_and_back():
    """While timed, the candidate's child and the baseline's timer run on the same CPUs
    (timing_session.timing_cpus): every thread of every process of the child's group moves."""
    everywhere = sorted(os.sched_getaffinity(0))
    one = everywhere[-1]
    # in a PID namespace of its own too (the judge's children on a GPU machine)
    for isolate in [False, True] if namespaces_available() else [False]:
        moved = []

        def answer(message, replier, moved=moved):
            if message == {"kind": "ready"}:
                moved.append(replier.pin_child({one} if len(moved) == 0 else None))
                replier.send("go")

        result = run("affinity", {"rounds": 2}, on_message=answer, isolate=isolate)
        assert result.completed, result.stderr
        pinned, back = result.returned
        assert pinned == {"main": [one], "thread": [one], "grandchild": [one]}
        assert back == {"main": everywhere, "thread": everywhere, "grandchild": everywhere}
        assert moved[0] >= 3 and moved[1] >= 3  # the main thread, its thread, the grandchild at least


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: no calling CPU apart from the rest")
def test_a_childs_calling_thread_takes_its_cpu_alone_beside_the_group_on_the_rest_and_comes_back():
    """A timing session's pinning as a confined child lives it (timing_session.calling_cpu):
    the judge puts the child's group on the session's CPUs but one, the child's calling
    thread takes that one alone, its other threads stay on the rest (and it can count those
    left beside it, timed_calls.threads_beside); after the session the judge's
    pin_child(None) puts all of them back on every CPU."""
    everywhere = sorted(os.sched_getaffinity(0))
    one, rest = everywhere[-1], set(everywhere[:-1])
    checked = 0
    for isolate in [False, True] if namespaces_available() else [False]:
        state = {"round": 0}

        def answer(message, replier, state=state):
            if message == {"kind": "ready"}:
                if state["round"] == 0:
                    replier.pin_child(rest)
                    replier.send({"cpu": one})
                else:
                    replier.pin_child(None)
                    replier.send("back")
                state["round"] += 1

        result = run("calling_thread", {}, on_message=answer, isolate=isolate)
        assert result.completed, result.stderr
        during, after = result.returned
        # beside: read in the confined child too (0: its other thread is on the rest)
        assert during == {"pinned": one, "main": [one], "thread": sorted(rest), "beside": 0}
        assert after == {"main": everywhere, "thread": everywhere}
        checked += 1
    assert checked == (2 if namespaces_available() else 1)


def test_exit_handlers_of_the_child_cannot_add_frames():
    result = run("exit_handler")
    assert result.returned == "done"
    assert {"forged": True} not in result.messages


@pytest.mark.parametrize("entry", ["no_such_function"])
def test_an_unknown_entry_is_reported_not_raised(entry):
    result = run(entry)
    assert result.returncode == 70
    assert "AttributeError" in result.stderr


needs_namespaces = pytest.mark.skipif(not namespaces_available(),
                                     reason="unprivileged user namespaces unavailable")


@needs_namespaces
def test_an_isolated_child_sees_no_other_process_and_no_network():
    plain = run("neighbours").returned
    assert "geak-sbx-" not in plain["parent_environ"], "without isolation the judge's own environment"
    isolated = run("neighbours", isolate=True)
    seen = isolated.returned
    assert isolated.completed, isolated.stderr
    # Its parent is the namespace's init, which holds the child's own scrubbed environment.
    assert "geak-sbx-" in seen["parent_environ"]
    assert set(seen["processes"]) <= {1, 2, 3}
    assert seen["network"] is False


@needs_namespaces
def test_a_crash_inside_the_namespaces_is_still_reported_as_a_signal():
    result = run("crash", isolate=True)
    assert result.signal_name == "SIGSEGV", (result.returncode, result.stderr)


def test_a_spare_says_when_its_preloads_are_in_and_still_takes_its_job():
    from geak_core.kit.sandbox import start_spare
    from judge_support import FIXTURES

    spare = start_spare({"GEAK_TEST_PLAIN": "1"}, preload=("json",))
    assert spare is not None
    try:
        assert spare.wait_ready(60) and spare.ready() and spare.alive()
        result = run_sandboxed("minisuite.probes:describe", {"x": 2}, timeout_s=30,
                               sys_path=[str(FIXTURES)], spare=spare)
        assert result.completed and result.returned["args"] == {"x": 2}
        assert not spare.alive()
    finally:
        spare.close()
    assert not spare.ready()  # its private directory went with it


def test_large_reads_land_in_fresh_mappings_small_ones_in_bytearrays():
    import mmap
    import threading

    from geak_core.kit.sandbox import BIG_BUFFER, _read_exact

    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"ab" * 10)
        small = _read_exact(read_fd, 20)
        assert isinstance(small, bytearray) and small == b"ab" * 10
    finally:
        os.close(read_fd)
        os.close(write_fd)
    source, sink = os.pipe()
    payload = os.urandom(BIG_BUFFER + 5)
    writer = threading.Thread(target=lambda: (os.write(sink, payload), os.close(sink)))
    writer.start()
    try:
        big = _read_exact(source, len(payload))
        assert isinstance(big, mmap.mmap) and bytes(big) == payload
        assert _read_exact(source, 1) is None  # the writer closed its end
    finally:
        writer.join()
        os.close(source)


# ---------------------------------------------------------------------------
# Confinement, environment, limits, dying with the judge
# ---------------------------------------------------------------------------

needs_landlock = pytest.mark.skipif(not __import__("geak_core.kit.confinement").kit.confinement.landlock_abi(),
                                    reason="this kernel offers no Landlock")


@needs_landlock
@pytest.mark.parametrize("isolate", [False, pytest.param(True, marks=needs_namespaces)])
def test_a_confined_child_writes_only_its_own_folders(tmp_path, isolate):
    import socket

    from geak_core.kit.confinement import Confinement

    project_file = os.path.join(os.path.dirname(__file__), "judge_support.py")
    home = os.path.expanduser("~")
    home_file = os.path.join(home, f".geak-sandbox-test-{os.getpid()}")
    cache = tmp_path / "cache"
    cache.mkdir()
    other = tmp_path / "other.txt"
    other.write_text("untouched\n")
    before = {p: open(p, "rb").read() for p in (project_file, other)}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        result = run("reach", {"write": [project_file, home_file, str(other), str(cache / "kernel.bin")],
                               "read": [str(other)], "port": listener.getsockname()[1], "pid": os.getpid()},
                     confine=Confinement(writable=[str(cache)]), isolate=isolate)
    finally:
        listener.close()
    seen = result.returned
    assert result.completed, (result.describe_exit(), result.stderr)
    refused = {path: outcome for path, outcome in seen["write"].items() if outcome.startswith("refused")}
    assert set(refused) == {project_file, home_file, str(other)}, seen["write"]
    assert seen["write"][str(cache / "kernel.bin")] == "written"
    assert {p: open(p, "rb").read() for p in before} == before
    assert not os.path.exists(home_file)
    assert seen["read"][str(other)].startswith("refused"), "the temporary folder is hidden"
    assert seen["tcp"].startswith("refused"), seen["tcp"]
    if isolate:  # the judge's process is not in the child's PID namespace at all
        assert seen["environ"].startswith("refused") and seen["signal"].startswith("refused"), seen
    elif __import__("geak_core.kit.confinement").kit.confinement.landlock_abi() >= 6:
        assert seen["signal"].startswith("refused"), seen["signal"]


def test_no_variable_off_the_allow_list_reaches_the_child(monkeypatch):
    secrets = {"MYSQL_PWD": "s3cret-1", "DB_PASS": "s3cret-2", "GITHUB_PAT": "s3cret-3",
               "SLACK_WEBHOOK": "https://hooks.example/s3cret-4", "PLAIN_NAME": "s3cret-5",
               "CUDA_API_TOKEN": "s3cret-6", "TRITON_SECRET": "s3cret-7"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_MODULE_LOADING", "LAZY")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    seen = run("environment").returned
    assert not [v for v in seen.values() if "s3cret" in v], seen
    assert not set(secrets) & set(seen)
    assert seen["CUDA_MODULE_LOADING"] == "LAZY" and seen["LC_ALL"] == "C.UTF-8"
    assert seen["HOME"] == seen["TMPDIR"] and "geak-sbx-" in seen["HOME"]


def test_the_allow_list_takes_more_names_and_never_a_credential():
    from geak_core.kit.confinement import child_environment

    base = {"PATH": "/bin", "MY_TOOL_HOME": "/opt/t", "MY_TOOL_KEY": "k", "PATHS_EXTRA": "x"}
    env = child_environment(base, "/w", extra=("MY_TOOL_*",))
    assert env["PATH"] == "/bin" and env["MY_TOOL_HOME"] == "/opt/t"
    assert "MY_TOOL_KEY" not in env and "PATHS_EXTRA" not in env
    assert env["HOME"] == "/w"


def test_host_memory_is_limited_and_the_failure_names_the_limit():
    from geak_core.kit.limits import ChildLimits

    result = run("allocate", {"mb": 1024}, limits=ChildLimits(memory_mb=256))
    assert not result.completed
    assert "MemoryError" in result.stderr
    assert "host memory is limited to 256 MiB" in result.describe_exit()
    assert run("allocate", {"mb": 64}, limits=ChildLimits(memory_mb=256)).returned == "allocated 64 MiB"


def test_open_files_and_file_size_are_limited():
    from geak_core.kit.limits import ChildLimits

    files = run("many_files", {"count": 500}, limits=ChildLimits(open_files=64)).returned
    assert files["opened"] < 64 and files["error"] == "Too many open files"
    result = run("big_file", {"mb": 8}, limits=ChildLimits(file_mb=4))
    assert result.signal_name == "SIGXFSZ" or "File too large" in result.stderr, result.describe_exit()
    assert "4 MiB" in result.describe_exit()


@needs_namespaces
def test_processes_and_threads_are_limited_for_root_too():
    """In its own PID namespace the child's process ids are capped (pid_max), which bounds its
    processes and threads whoever runs the judge."""
    from geak_core.kit.limits import ChildLimits

    result = run("many_threads", {"count": 2000}, limits=ChildLimits(processes=500), isolate=True)
    assert result.completed, result.stderr
    assert 400 < result.returned["started"] < 500 and "can't start new thread" in result.returned["error"]


def _marked(marker):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("isolate", [False, pytest.param(True, marks=needs_namespaces)])
def test_killing_the_judge_with_sigkill_ends_its_children_within_a_second(tmp_path, isolate):
    """A judge process runs a child that started a grandchild in a session of its own; after
    ``kill -9`` of the judge, none of them is alive a second later (without namespaces the
    grandchild, outside the child's process group and tree, is out of reach: it is counted,
    not required)."""
    import signal
    import subprocess
    import sys
    import uuid

    from judge_support import FIXTURES

    tag = uuid.uuid4().hex
    marker = f"geak-escapee-{tag}"  # in the child's and the escapee's command lines, not the judge's
    script = (
        "import sys\n"
        "from geak_core.kit.sandbox import run_sandboxed\n"
        "def seen(message, replier):\n"
        "    print('STARTED', flush=True)\n"
        "run_sandboxed('minisuite.probes:hang_with_escapee', {'marker': 'geak-escapee-' + sys.argv[1]},\n"
        f"              timeout_s=300, sys_path=[{str(FIXTURES)!r}], isolate={isolate}, on_message=seen)\n"
    )
    judge = subprocess.Popen([sys.executable, "-c", script, tag], stdout=subprocess.PIPE, text=True)
    try:
        assert judge.stdout.readline().strip() == "STARTED"
        deadline = time.monotonic() + 10
        while len(_marked(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_marked(marker)) == 2, "the child and its escapee are running"
        os.kill(judge.pid, signal.SIGKILL)
        judge.wait(timeout=10)
        time.sleep(1.0)
        alive = _marked(marker)
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)
    if isolate:
        assert alive == [], "every process of the namespace died with the judge"
    else:
        assert len(alive) <= 1, "the child itself died with the judge"


def test_without_landlock_the_judge_refuses_untrusted_code_unless_told_otherwise(monkeypatch):
    from geak_evaluator_triton import evaluator as module
    from geak_evaluator_triton.evaluator import TritonEvaluator
    from geak_evaluator_triton.run_compare import JudgeError
    from judge_support import judge_options

    monkeypatch.setattr(module, "landlock_abi", lambda: 0)
    refusing = TritonEvaluator(judge_options(workers=1))
    try:
        with pytest.raises(JudgeError, match='confinement = "none"'):
            refusing.runtime()
    finally:
        refusing.close()
    opted_out = TritonEvaluator(judge_options(workers=1, confinement="none"))
    try:
        assert opted_out.runtime().mode == "interpreter"
        assert opted_out.children.confinement("/tmp/cache", {}) is None
    finally:
        opted_out.close()


def test_stop_running_jobs_kills_every_running_child_group_at_once():
    """Ctrl-C reaches the judge, not its children (their own process groups): the judge
    kills them, and the job returns at once, not at its timeout."""
    import threading

    from geak_core.kit.sandbox import stop_running_jobs

    results = []
    seen = threading.Event()

    def started(message, replier):
        seen.set()

    worker = threading.Thread(target=lambda: results.append(run("spawn_and_hang", on_message=started,
                                                                timeout_s=60)))
    began = time.monotonic()
    worker.start()
    assert seen.wait(30)  # the child runs (it sent its grandchild's pid)
    assert stop_running_jobs() == 1
    worker.join(30)
    assert not worker.is_alive() and time.monotonic() - began < 30
    result = results[0]
    assert not result.completed and not result.timed_out and result.returncode != 0
    grandchild = next(m["grandchild"] for m in result.messages if isinstance(m, dict) and "grandchild" in m)
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{grandchild}") or open(f"/proc/{grandchild}/stat").read().split()[2] == "Z"
    assert stop_running_jobs() == 0  # nothing left running


def test_after_a_stop_that_refuses_new_jobs_none_starts_until_jobs_are_accepted_again():
    """Ctrl-C in a batch: a verdict in flight whose child was killed must not go on to start
    its next child (a reference's timed runs, a timer) and hold the process up; a later batch
    (``accept_new_jobs``) runs as before."""
    from geak_core.kit.sandbox import STOPPED_NOTE, accept_new_jobs, stop_running_jobs

    try:
        stop_running_jobs(refuse_new=True)
        began = time.monotonic()
        refused = run("describe")
        assert time.monotonic() - began < 1.0
        assert not refused.completed and refused.channel_error == STOPPED_NOTE
        assert STOPPED_NOTE in refused.describe_exit()
    finally:
        accept_new_jobs()
    assert run("describe").completed


def test_the_projects_packages_stay_readable_for_a_child_when_the_checkout_is_hidden():
    """An editable checkout under the temporary folder or the home directory (both hidden from
    children) imports its plugins through import hooks no sys.path entry names: the judge
    shows a child every package folder of the project by name (a clean clone in /tmp had every
    reference's child fail with PermissionError on geak_evaluator_triton/__init__.py)."""
    import geak_core
    import geak_evaluator_triton
    from geak_core.engine.plugins import package_folders
    from geak_core.kit.confinement import read_roots
    from geak_evaluator_triton.child_pool import Children
    from geak_evaluator_triton.options import TritonEvaluatorOptions

    evaluator_folder = os.path.realpath(os.path.dirname(geak_evaluator_triton.__file__))
    core_folder = os.path.realpath(os.path.dirname(geak_core.__file__))
    assert {evaluator_folder, core_folder} <= set(package_folders())
    confine = Children(TritonEvaluatorOptions(mode="interpreter")).confinement("/nonexistent-cache", {"task": {}})
    assert evaluator_folder in confine.visible and core_folder in confine.visible
    # with the checkout's folder hidden, the package folders are still among what a child reads
    checkout = os.path.dirname(os.path.dirname(evaluator_folder))
    roots = read_roots([checkout], confine.visible)
    assert evaluator_folder in roots and not any(r == checkout for r in roots)


# ---------------------------------------------------------------------------
# A child under a tool (a profiler)
# ---------------------------------------------------------------------------

TOOL = """#!{python}
import json, os, subprocess, sys
out, command = sys.argv[1], sys.argv[2:]
with open(os.path.join(out, "tool.json"), "w") as handle:
    json.dump({{"argv": sys.argv, "env": dict(os.environ), "pid": os.getpid()}}, handle)
print("TOOL SAYS HELLO", flush=True)
sys.exit(subprocess.call(command, close_fds=False))
"""


def _tool(tmp_path):
    import sys

    path = tmp_path / "tool.py"
    path.write_text(TOOL.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("isolate", [False, pytest.param(True, marks=needs_namespaces)])
def test_a_wrapped_child_runs_under_its_tool_confined_and_scrubbed_and_hands_back_its_files(tmp_path, monkeypatch,
                                                                                          isolate):
    import json

    from geak_core.kit.confinement import Confinement, landlock_abi
    from geak_core.kit.sandbox import Wrapper

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    out = tmp_path / "out"
    out.mkdir()
    wrapper = Wrapper((_tool(tmp_path), "{out}"), {"TOOL_REPORT": "{out}/report"}, str(out))
    confine = Confinement() if landlock_abi() else None
    result = run("tool_out", {}, wrapper=wrapper, confine=confine, isolate=isolate)
    assert result.completed, (result.describe_exit(), result.stderr)
    assert "TOOL SAYS HELLO" in result.stdout
    seen = result.returned
    tool = json.loads((out / "tool.json").read_text())
    if not isolate:  # in a PID namespace of its own the child cannot see its parent
        assert seen["ppid"] == tool["pid"], "the tool started the child"
    assert tool["argv"][1] == seen["env"]["GEAK_TOOL_OUT"] and tool["argv"][2] == __import__("sys").executable
    job = os.path.dirname(seen["env"]["GEAK_TOOL_OUT"])
    assert os.path.basename(job).startswith("geak-sbx-") and not os.path.exists(job)
    for env in (tool["env"], seen["env"]):
        assert "OPENAI_API_KEY" not in env and "sk-secret" not in repr(env)
        assert os.path.dirname(env["TMPDIR"]) == job, "the tool's temporary folder is in the job's"
        assert env["TOOL_REPORT"] == os.path.join(job, "tool-out", "report")
    assert (out / "from-child.txt").read_text() == "written by the child\n"
    assert not os.path.lexists(out / "planted"), "a link the child planted is not handed back"


def test_a_timeout_kills_the_tool_with_its_child_and_a_spare_cannot_be_wrapped(tmp_path):
    from geak_core.kit.sandbox import Wrapper, start_spare

    out = tmp_path / "out"
    out.mkdir()
    started = time.monotonic()
    result = run("tool_out", {"sleep": 120}, wrapper=Wrapper((_tool(tmp_path), "{out}"), out=str(out)),
                 timeout_s=3)
    assert result.timed_out and time.monotonic() - started < 20
    tool_pid = __import__("json").loads((out / "tool.json").read_text())["pid"]
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{tool_pid}") or open(f"/proc/{tool_pid}/stat").read().split(")")[-1].split()[0] in "ZX"
    spare = start_spare()
    try:
        with pytest.raises(ValueError, match="cannot be a spare"):
            run("describe", spare=spare, wrapper=Wrapper(("true",)))
    finally:
        spare.close()


def test_a_tool_that_cannot_start_is_an_exit_status_that_names_it(tmp_path):
    from geak_core.kit.sandbox import Wrapper

    result = run("describe", wrapper=Wrapper((str(tmp_path / "no-such-tool"),), out=str(tmp_path)))
    assert not result.completed and result.returncode == 127
    assert "cannot start the tool" in result.stderr and "no-such-tool" in result.stderr
