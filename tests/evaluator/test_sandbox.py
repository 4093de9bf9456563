"""The sandbox: a fresh process group, a scrubbed environment, a private directory, a pipe."""

from __future__ import annotations

import os
import time

import pytest
from geak_core.sandbox import namespaces_available, run_sandboxed, scrub_env


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
    from geak_core.sandbox import start_spare
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

    from geak_core.sandbox import BIG_BUFFER, _read_exact

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
