"""``geak-core mcp`` as a coding agent meets it: a real server process, spoken to by the ``mcp``
package's own client (stdio, and streamable HTTP). Its ``judge`` gives the verdicts ``geak-core
eval`` gives for the same files; a malformed call gets an error result and the server answers
the next one; a long call reports progress; when the client closes, the server's whole
process tree (the judge's children with it) is gone within a second."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from judge_support import ADD_HANGS_IN_LAUNCH, CHEATS, FIXTURES

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

pytestmark = pytest.mark.slow

REFERENCES = FIXTURES / "minisuite" / "references"
# `geak-core` with the mini suite registered, as tests/evaluator/test_cli_eval.py starts eval
SERVER = (
    "import sys, minisuite\n"
    "from geak_core.engine.plugins import PluginManager, reset_plugin_manager\n"
    "reset_plugin_manager(PluginManager(extra_plugins=[('minisuite', minisuite)]))\n"
    "from geak_core.cli import main\n"
    "main(sys.argv[1:])\n"
)
JUDGE = ["--suite", "mini", "--mode", "interpreter", "--workers", "2", "--pythonpath", str(FIXTURES),
         "--seeds", "0"]
# the fields of a verdict that do not depend on how long it took
VERDICT_FIELDS = ("task", "suite", "candidate", "call_ok", "correct", "failed_stage", "reason", "error",
                  "speedup", "performance_measured", "mismatches", "skipped", "flags", "mode")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])}


def _server(tmp_path: Path, *extra: str) -> list[str]:
    return ["-c", SERVER, "mcp", *JUDGE, "--out-dir", str(tmp_path / "out"), "--runs-dir",
            str(tmp_path / "runs"), *extra]


def _children(pid: int) -> dict[int, int]:
    """ppid of every process, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _tree(root: int) -> set[int]:
    """``root`` and every process descended from it."""
    parents = _children(root)
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; its parent has yet to reap it


def _server_pid() -> int:
    (pid,) = [pid for pid, parent in _children(os.getpid()).items()
              if parent == os.getpid() and b"mcp" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    return pid


def _eval_records(tmp_path: Path, files: list[str]) -> dict[str, dict]:
    """``geak-core eval``'s records of ``files``, by candidate."""
    import minisuite
    from geak_core.cli.cli_eval import eval_command
    from geak_core.engine.plugins import PluginManager, reset_plugin_manager

    reset_plugin_manager(PluginManager(extra_plugins=[("minisuite", minisuite)]))
    out = tmp_path / "eval.jsonl"
    result = CliRunner().invoke(eval_command, [*JUDGE, "--task", "add", "--out", str(out), *files],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {r["candidate"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_judge_over_stdio_gives_evals_verdicts_and_a_bad_call_an_error_result(tmp_path):
    from geak_core.engine.tools import TOOL_SPECS

    correct = (REFERENCES / "add.py").read_text()
    wrong = (CHEATS / "add_unwritten.py").read_text()
    progress: list[list[tuple[float, str]]] = [[], []]  # per judgement

    def listener(heard: list[tuple[float, str]]):
        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            heard.append((value, message or ""))
        return on_progress

    async def session() -> tuple[list[str], list, list]:
        params = StdioServerParameters(command=sys.executable, args=_server(tmp_path), env=_env())
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            names = [tool.name for tool in (await client.list_tools()).tools]
            verdicts = [await client.call_tool("judge", {"suite": "mini", "task": "add", "code": code},
                                               progress_callback=listener(heard))
                        for code, heard in zip((correct, wrong), progress, strict=True)]
            bad = [await client.call_tool("judge", arguments) for arguments in (
                {"suite": "mini", "task": "add"},
                {"suite": "mini", "task": "ad", "code": correct},
                {"suite": "mini", "task": "add", "code": 42},
            )]
            bad.append(await client.call_tool("show_task", {"suite": "mini", "task": "add"}))
            return names, verdicts, bad

    names, verdicts, bad = anyio.run(session)
    assert {"list_tasks", "show_task", "judge", "runs_list", "runs_show"} <= set(names) <= set(TOOL_SPECS)
    assert "profile" not in names  # no profiler can run on this machine
    records = [v.structured_content for v in verdicts]
    assert not any(v.is_error for v in verdicts)
    assert [r["correct"] for r in records] == [True, False] and records[1]["failed_stage"] == "stage1"
    assert json.loads(verdicts[0].content[0].text) == records[0]
    # the code was judged from its file under --out-dir, as eval judges a file: the same records
    files = [r["candidate"] for r in records]
    assert all(Path(f).parent == tmp_path / "out" / "candidates" / "mini" for f in files)
    expected = _eval_records(tmp_path, files)
    for record in records:
        assert {k: record[k] for k in VERDICT_FIELDS} == {k: expected[record["candidate"]][k] for k in VERDICT_FIELDS}
    logged = [json.loads(line) for line in (tmp_path / "out" / "judged.jsonl").read_text().splitlines()]
    assert [r["candidate"] for r in logged] == files
    # each judgement told its progress while it ran, each second
    for heard in progress:
        assert heard and all(m.startswith(("judge started", "judging mini/add")) for _, m in heard)
        values = [v for v, _ in heard]
        assert values == sorted(set(values)), "progress only grows"
    # a malformed call is an error result that says what is wrong; the server answers the next
    missing, unknown, not_text, after = bad
    assert missing.is_error and "missing argument 'code'" in missing.content[0].text
    assert unknown.is_error and "no task 'ad'" in unknown.content[0].text and "did you mean 'add'" in unknown.content[0].text
    assert not_text.is_error and "argument 'code': expected a string, got an integer" in not_text.content[0].text
    assert not after.is_error and after.structured_content["entry_points"][0]["name"] == "add_kernel"


def test_closing_the_client_ends_the_server_and_its_judge_children_within_a_second(tmp_path):
    """The client goes away while a judgement is in flight (a candidate stuck in its launch):
    the server and every process under it end within a second of stdin closing."""

    async def session() -> tuple[set[int], float]:
        params = StdioServerParameters(command=sys.executable, args=_server(tmp_path), env=_env())
        judging = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if value >= 6:  # the candidate's child is up and stuck
                judging.set()

        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: client.call_tool(
                    "judge", {"suite": "mini", "task": "add", "code": ADD_HANGS_IN_LAUNCH}, progress_callback=on_progress))
                with anyio.fail_after(120):
                    await judging.wait()
                tree = _tree(_server_pid())
                group.cancel_scope.cancel()
            closing = time.monotonic()
        return tree, closing

    tree, closing = anyio.run(session)
    assert len(tree) > 1, "the judge had children running"
    while any(_alive(pid) for pid in tree) and time.monotonic() - closing < 1.0:
        time.sleep(0.02)
    assert not [pid for pid in tree if _alive(pid)], f"left running {time.monotonic() - closing:.2f} s after closing"


def test_streamable_http_serves_the_same_tools_and_resources(tmp_path):
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, *_server(tmp_path, "--http", str(port))], env=_env(),
                              stderr=subprocess.PIPE, text=True)
    try:
        assert "serving" in server.stderr.readline()

        async def session() -> tuple[list[str], dict, str]:
            url = f"http://127.0.0.1:{port}/mcp"
            with anyio.fail_after(60):
                while True:  # the port answers once uvicorn has started
                    try:
                        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                        break
                    except OSError:
                        await anyio.sleep(0.1)
                async with streamable_http_client(url) as (read, write), ClientSession(read, write) as client:
                    await client.initialize()
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    tasks = await client.call_tool("list_tasks", {"suite": "mini", "options": {"categories": ["Math"]}})
                    statement = await client.read_resource("geak://tasks/mini/add")
                    return names, tasks.structured_content, statement.contents[0].text

        names, tasks, statement = anyio.run(session)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "judge" in names
    assert [t["id"] for t in tasks["tasks"]] == ["add", "scale"] and tasks["count"] == 2
    assert statement.startswith("mini/add  (difficulty 1, category Math)\n\nout = x + y elementwise.")
    assert "[triton.jit] add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr)" in statement
