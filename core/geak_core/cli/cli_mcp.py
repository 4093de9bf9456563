"""``geak-core mcp``: the judge as tools for coding agents, over the Model Context Protocol.

The tools are ``engine.tools``' (``list_tasks``, ``show_task``, ``judge``, ``profile`` where a
profiler is usable, ``tune`` where a tuner is installed, ``runs_list``, ``runs_show``), over
one judge built when the server starts and closed when it stops: as ``geak-core eval`` builds
it from ``--evaluator``, ``--executor``, ``--mode``, ... (``judge_options``), or from a
recipe's ``[evaluator]`` and ``[executor]`` (``--recipe R``, which also gives the served
suite and its tasks, ``[suite]``, the hardware profile, the tuner's and profiler's budgets;
``agent.prepare`` builds them as ``run`` would, but for the LLM). Without ``--suite`` or a
recipe every registered suite is served with its default options.

Read-only resources: ``geak://suites`` (the served suites), ``geak://suites/{suite}/tasks``,
``geak://tasks/{suite}/{task}`` (a task's statement as a model is shown it), and for each
stored run ``geak://runs/{run}/summary`` and ``geak://runs/{run}/transcript`` (``runs
show --json`` and ``runs log``).

The protocol (its framing, schemas, transports) is the ``mcp`` package's, an optional extra
(``pip install 'geak-core[mcp]'``); without it the command says so and exits 2. stdio by
default; ``--http PORT`` serves streamable HTTP on 127.0.0.1:PORT (path ``/mcp``). A call
that is wrong in any way gets an error result (``isError``) saying why, and the server goes
on; a long call (judge, profile, tune) sends progress notifications each second when the
client gave a progress token. When the client closes stdin the judge's running children are
killed and the server exits at once.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import click

from geak_core.api.errors import GeakError, InputError
from geak_core.cli.cli_eval import build_judge, judge_options, suite_option_flag
from geak_core.cli.cli_options import build_with_options, exit_on_bad_input
from geak_core.engine.tools import TOOL_SPECS, JudgeTools, ToolError, statement_text

log = logging.getLogger(__name__)

INSTALL_HINT = ("geak-core mcp needs the mcp package (the Model Context Protocol): "
                "pip install 'geak-core[mcp]', or pip install 'mcp>=2.3,<3'")
ORIGIN = "geak-core mcp"
TICK_S = 1.0  # seconds between progress notifications of a long call
# The judge options of `eval`, by parameter: the recipe key each sets with --recipe, and its flag.
JUDGE_KEYS = {
    "evaluator_name": ("evaluator.name", "--evaluator"), "executor_name": ("executor.name", "--executor"),
    "mode": ("evaluator.mode", "--mode"), "workers": ("evaluator.workers", "--workers"),
    "timeout_s": ("evaluator.timeout_s", "--timeout"), "hardware": ("evaluator.hardware", "--hardware"),
    "speedup_method": ("evaluator.speedup_method", "--speedup-method"),
}


# -- the tools, from the command line or a recipe -------------------------------------


def tools_from_options(suite_name: str | None, suite_options: tuple[str, ...], out_dir: str, runs_dir: str,
                       judge: dict[str, Any]) -> JudgeTools:
    """The tools over the judge ``eval`` builds from the same options: ``suite_name`` (built
    with ``suite_options``) or every registered suite; the tuner ``tune`` takes by default
    and the usable profilers, with their default budgets."""
    from geak_core.api.components import TuneBudget
    from geak_core.engine.hardware import resolve_profile, visible_device
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import ProfilerSection, TunerSection
    from geak_core.engine.tools import Suites, installed_tuning, usable_profiling

    plugins = get_plugin_manager()
    if suite_name is None:
        if suite_options:
            raise InputError("--suite-option needs --suite NAME: the options are that suite's")
        suites = Suites.registered(plugins)
    else:
        suite = build_with_options("suite", suite_name, suite_options, "--suite-option")
        suites = Suites({suite_name: suite.tasks},
                        descriptions={suite_name: plugins.spec("suite", suite_name).description})
    hardware = resolve_profile(judge["hardware"] or "auto", plugins, visible_device())
    tuner, profiler = TunerSection(), ProfilerSection()
    tuning = installed_tuning(plugins, hardware, TuneBudget(tuner.candidates, tuner.seconds))
    profiling = usable_profiling(plugins, hardware, profiler.seconds)
    return JudgeTools(build_judge(**judge), suites, out_dir=out_dir, runs_dir=runs_dir, hardware=hardware,
                      tuning=tuning, profiling=profiling)


def _overrides(ctx: click.Context, judge: dict[str, Any]) -> list[tuple[str, str]]:
    """The judge options typed on the command line, as overrides of the recipe's keys."""
    typed = [name for name in judge
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    pairs = []
    for name in typed:
        value = judge[name]
        if name in JUDGE_KEYS:
            key, flag = JUDGE_KEYS[name]
            pairs.append((f"{key}={json.dumps(value)}", f"{flag} {value}"))
        elif name == "seeds":
            pairs.append((f"evaluator.seeds=[{value}]", f"--seeds {value}"))
        elif name == "pythonpath":
            paths = [str(Path(p).resolve()) for p in value]
            pairs.append((f"evaluator.extra_pythonpath={json.dumps(paths)}", "--pythonpath"))
        elif name == "executor_options":
            pairs += [(f"executor.{pair}", f"--executor-option {pair}") for pair in value]
    return pairs


def tools_from_recipe(recipe: str, suite_name: str | None, suite_options: tuple[str, ...], out_dir: str,
                      runs_dir: str | None, overrides: list[tuple[str, str]]) -> JudgeTools:
    """The tools over the judge a run of ``recipe`` would build (``agent.prepare``, the LLM
    left out): its suite and the tasks its ``[suite]`` chooses (``suite_name`` replaces that
    table, as ``optimize`` replaces it), its hardware profile, its tuner and profiler with
    their budgets (where it names none, those a command takes by default)."""
    from geak_core.engine.agent import prepare
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import key_value, load_recipe
    from geak_core.engine.tools import Suites, recipe_tooling

    if not Path(recipe).is_file():
        raise InputError(f"no such recipe: {recipe}")
    plugins = get_plugin_manager()
    sections = {}
    if suite_name is not None:
        table: dict[str, Any] = {"name": suite_name}
        for pair in suite_options:
            parsed = key_value(pair)
            if parsed is None:
                raise InputError(f"--suite-option takes KEY=VALUE, got {pair!r}")
            table[parsed[0]] = parsed[1]
        sections["suite"] = (table, f"{ORIGIN} --suite")
    elif suite_options:
        raise InputError("--suite-option needs --suite NAME: the options are that suite's")
    loaded = load_recipe(recipe, plugins, check_env=False, overrides=overrides, sections=sections)
    prepared = prepare(loaded, plugins, llm=False)
    suite = loaded.components["suite"].name
    suites = Suites({suite: lambda: prepared.tasks}, descriptions={suite: plugins.spec("suite", suite).description})
    tuning, profiling = recipe_tooling(loaded, prepared.components, prepared.hardware, plugins)
    return JudgeTools(prepared.components["evaluator"], suites, out_dir=out_dir,
                      runs_dir=runs_dir or loaded.run.output_dir, hardware=prepared.hardware,
                      tuning=tuning, profiling=profiling)


# -- the server ---------------------------------------------------------------------------


def _text(value: Any) -> str:
    return json.dumps(value, indent=2, default=str)


def build_server(tools: JudgeTools) -> Any:
    """The MCP server (the ``mcp`` package's low-level ``Server``) of ``tools``: tools,
    resources, progress, and an error result for every bad call."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from geak_core import __version__

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema)
            for spec in tools.specs()])

    def error(message: str) -> Any:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"error: {message}")],
                                    is_error=True)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name, arguments = params.name, params.arguments
        outcome: dict[str, Any] = {}
        state = {"message": f"{name} started"}

        def work() -> None:
            try:
                outcome["result"] = tools.call(name, arguments, lambda message: state.update(message=message))
            except Exception as exc:  # said to the client below; the server goes on
                outcome["error"] = exc

        spec = TOOL_SPECS.get(name)
        if spec is not None and spec.long:
            started, sent = time.monotonic(), [0.0]

            async def tick() -> None:
                while True:
                    elapsed = max(round(time.monotonic() - started, 1), sent[0] + 0.1)
                    sent[0] = elapsed
                    await ctx.session.report_progress(elapsed, None, f"{state['message']} ({elapsed:.0f} s)")
                    await anyio.sleep(TICK_S)

            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                group.cancel_scope.cancel()
        else:
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        if "error" in outcome:
            exc = outcome["error"]
            if isinstance(exc, GeakError):
                return error(f"{name}: {exc}")
            log.error("tool %s failed", name, exc_info=exc)
            return error(f"{name} failed inside the server: {type(exc).__name__}: {exc}")
        result = json.loads(_text(outcome["result"]))
        return types.CallToolResult(content=[types.TextContent(type="text", text=_text(result))],
                                    structured_content=result)

    def run_uris() -> list[Any]:
        resources = []
        for row in tools.runs_list()["runs"]:
            run = quote(row["run_id"], safe="")
            resources += [
                types.Resource(name=f"run {row['run_id']}: summary", uri=f"geak://runs/{run}/summary",
                               mime_type="application/json"),
                types.Resource(name=f"run {row['run_id']}: transcript", uri=f"geak://runs/{run}/transcript",
                               mime_type="text/plain")]
        return resources

    async def list_resources(ctx: Any, params: Any) -> Any:
        resources = [types.Resource(name="suites", uri="geak://suites", mime_type="application/json",
                                    description="The suites this server serves.")]
        resources += [types.Resource(name=f"{name}: tasks", uri=f"geak://suites/{quote(name, safe='')}/tasks",
                                     mime_type="application/json", description=tools.suites.description(name))
                      for name in tools.suites.names()]
        return types.ListResourcesResult(resources=resources + await anyio.to_thread.run_sync(run_uris))

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(name="tasks", uri_template="geak://suites/{suite}/tasks",
                                   mime_type="application/json", description="A suite's tasks (list_tasks)."),
            types.ResourceTemplate(name="task", uri_template="geak://tasks/{suite}/{task}", mime_type="text/plain",
                                   description="A task's statement, as a model is shown it."),
            types.ResourceTemplate(name="run summary", uri_template="geak://runs/{run}/summary",
                                   mime_type="application/json", description="A stored run (runs show --json)."),
            types.ResourceTemplate(name="run transcript", uri_template="geak://runs/{run}/transcript",
                                   mime_type="text/plain",
                                   description="Every prompt, reply, code and verdict of a run (runs log)."),
        ])

    def read(uri: str) -> tuple[str, str]:
        """(MIME type, text) of the resource at ``uri``."""
        prefix = "geak://"
        parts = [unquote(p) for p in uri[len(prefix):].split("/")] if uri.startswith(prefix) else []
        if parts == ["suites"]:
            return "application/json", _text([{"name": n, "description": tools.suites.description(n)}
                                               for n in tools.suites.names()])
        if len(parts) == 3 and parts[0] == "suites" and parts[2] == "tasks":
            return "application/json", _text(tools.list_tasks(parts[1]))
        if len(parts) == 3 and parts[0] == "tasks":
            return "text/plain", statement_text(tools.suites.task(parts[1], parts[2]))
        if len(parts) == 3 and parts[0] == "runs" and parts[2] == "summary":
            return "application/json", _text(tools.runs_show(parts[1]))
        if len(parts) == 3 and parts[0] == "runs" and parts[2] == "transcript":
            from geak_core.reporting.transcript import entries, render

            return "text/plain", render(entries(tools.run_dir(parts[1])))
        raise ToolError(f"no resource {uri!r}: geak://suites, geak://suites/SUITE/tasks, "
                        "geak://tasks/SUITE/TASK, geak://runs/RUN/summary or geak://runs/RUN/transcript")

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            mime, text = await anyio.to_thread.run_sync(read, uri)
        except GeakError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    return Server(
        "geak-core", version=__version__,
        instructions="geak-core's judge: list_tasks and show_task say what to write; judge checks a Triton "
                     "kernel in a sandbox against the task's reference (correctness on hidden seeds, anti-cheat "
                     "checks, speed on a GPU) and returns the same verdict record as `geak-core eval`.",
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource)


def serve(tools: JudgeTools, http_port: int | None) -> None:
    """Serve ``tools`` over stdio until the client closes stdin, or over streamable HTTP on
    127.0.0.1:``http_port`` until interrupted; then kill the judge's running children and
    let the judge go."""
    import anyio

    from geak_core.kit.sandbox import stop_running_jobs

    server = build_server(tools)

    async def over_stdio() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    async def over_http() -> None:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        config = uvicorn.Config(app, host="127.0.0.1", port=http_port, log_level="warning")
        await uvicorn.Server(config).serve()

    try:
        anyio.run(over_stdio if http_port is None else over_http)
    finally:
        stop_running_jobs(refuse_new=True)  # a judgement still in flight ends now
        tools.close()


@click.command("mcp", short_help="Serve the judge as MCP tools for coding agents.")
@click.option("--recipe", type=click.Path(dir_okay=False),
              help="Take the suite, the judge ([evaluator], [executor]), the hardware profile and the tuner's "
                   "and profiler's budgets from this recipe (its [llm] is checked, never called).")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.")
@click.option("--out-dir", default="mcp-out", show_default=True, type=click.Path(file_okay=False),
              help="The one folder the tools write to: judged candidates' files and the records of calls.")
@click.option("--runs-dir", type=click.Path(file_okay=False),
              help="Where runs_list and runs_show read stored runs (default: the recipe's [run] output_dir, "
                   "else runs).")
@click.option("--suite", "suite_name",
              help="Serve this registered suite only (default: the recipe's, else every registered suite).")
@suite_option_flag
@judge_options
@click.pass_context
def mcp_command(ctx: click.Context, recipe: str | None, http_port: int | None, out_dir: str, runs_dir: str | None,
                suite_name: str | None, suite_options: tuple[str, ...], **judge: Any) -> None:
    """Serve the judge's tools (list_tasks, show_task, judge, profile, tune, runs_list,
    runs_show) and read-only resources over the Model Context Protocol, stdio by default:
    a coding agent judges its kernels with the judge and the budgets `geak-core eval` uses."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        click.echo(f"error: {INSTALL_HINT}", err=True)
        sys.exit(2)
    if recipe is not None:
        tools = tools_from_recipe(recipe, suite_name, suite_options, out_dir, runs_dir, _overrides(ctx, judge))
    else:
        with exit_on_bad_input():
            tools = tools_from_options(suite_name, suite_options, out_dir, runs_dir or "runs", judge)
    names = ", ".join(spec.name for spec in tools.specs())
    where = "stdio" if http_port is None else f"http://127.0.0.1:{http_port}/mcp"
    click.echo(f"geak-core mcp: serving {names} over {where}; writing to {tools.out_dir}", err=True)
    serve(tools, http_port)
    exit_now()


def exit_now() -> None:
    """End the process at once. Every record is written and the judge's children are gone;
    the interpreter's teardown of torch would take a second or more, and a client closing
    the session is to see the server's whole process tree end within a second."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
