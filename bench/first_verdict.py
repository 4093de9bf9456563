"""Where the quickstart's first verdict spends its seconds, on this machine.

1. ``geak-core run recipes/quickstart.toml`` as a user types it, ``--repeats`` times, each
   in a fresh output folder: seconds from the command's start to its ``run ...`` line (all
   a run builds before its first LLM call is built) and to its first verdict line, and the
   whole run's.
2. The same run once more in this process, its steps timed from the start of the process
   (``--no-steps`` leaves it out): the imports, the plugins, the recipe, what ``prepare``
   builds, the run folder, the judge's runtime and each spare child's start and readiness,
   the first retrieval and LLM call, and the first verdict, with the phases the judge
   recorded for it (reference child, runs; candidate child, import, runs).
3. What one child costs: a fresh Python importing torch, then Triton, then the judge's
   preloads (``geak_evaluator_triton.warm``).

    python bench/first_verdict.py [--repeats 3] [--json first_verdict.json]

Figures on a shared machine move with its load: the load average is printed with them.
``TRITON_INTERPRET`` is unset, as for a user's first command (on a machine without a GPU
the judge then chooses the interpreter itself).
"""

from __future__ import annotations

import time

BEGAN = time.perf_counter()  # the steps count from here: before any import of geak-core

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "quickstart.toml"
VERDICT = re.compile(r"^\[\S+\] L\d+ I\d+ \w+\s*-> ")


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# ---------------------------------------------------------------------------
# 1. The command
# ---------------------------------------------------------------------------


def command_once(folder: str) -> dict[str, Any]:
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "geak_core.cli", "run", str(RECIPE), "--output-dir", folder],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={k: v for k, v in os.environ.items() if "KEY" not in k})
    row: dict[str, Any] = {"load": load()}
    assert proc.stdout is not None
    for line in proc.stdout:
        now = round(time.perf_counter() - began, 2)
        if line.startswith("run ") and "run_line_s" not in row:
            row["run_line_s"] = now
        elif VERDICT.match(line) and "first_verdict_s" not in row:
            row["first_verdict_s"] = now
    proc.wait()
    row["total_s"] = round(time.perf_counter() - began, 2)
    row["ok"] = proc.returncode == 0
    return row


def command(repeats: int) -> dict[str, Any]:
    rows = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            rows.append(command_once(folder))
    firsts = [r["first_verdict_s"] for r in rows if "first_verdict_s" in r]
    return {"runs": rows, "first_verdict_min_s": min(firsts, default=None),
            "first_verdict_median_s": statistics.median(firsts) if firsts else None}


# ---------------------------------------------------------------------------
# 2. The steps, in this process
# ---------------------------------------------------------------------------


class Steps:
    """Marks with their seconds since the process began, and spans (start, seconds)."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def mark(self, name: str) -> None:
        with self.lock:
            self.marks.append((round(time.perf_counter() - BEGAN, 3), name))

    def wrap(self, owner: Any, attribute: str, name: str, first_only: bool = True) -> None:
        """Marks ``name`` started/ended around calls of ``owner.attribute`` (the first one only
        with ``first_only``)."""
        original = getattr(owner, attribute)
        seen: list[bool] = []

        def timed(*args: Any, **kwargs: Any) -> Any:
            if first_only and seen:
                return original(*args, **kwargs)
            seen.append(True)
            self.mark(f"{name} started")
            try:
                return original(*args, **kwargs)
            finally:
                self.mark(f"{name} ended")

        setattr(owner, attribute, timed)


def watch_spares(steps: Steps, stop: threading.Event) -> None:
    """Marks when each of the judge's spare children is started and when it is ready."""
    from geak_evaluator_triton.child_pool import Children

    seen: dict[int, Any] = {}
    ready: set[int] = set()
    while not stop.is_set():
        for children in list(Children.instances):
            with children._spare_lock:
                current = dict(children._spares)
            for index, spare in current.items():
                if seen.get(index) is not spare:
                    seen[index] = spare
                    ready.discard(index)
                    steps.mark(f"spare {index} up (process started)")
                if index not in ready and spare.ready():
                    ready.add(index)
                    steps.mark(f"spare {index} ready (preloads imported)")
        time.sleep(0.01)


def steps_run() -> dict[str, Any]:
    steps = Steps()
    import geak_core.cli  # noqa: F401  (what the command imports first)

    steps.mark("geak_core.cli imported")
    from geak_core.engine import agent
    from geak_core.engine.plugins import get_plugin_manager
    from geak_core.engine.recipe import load_recipe
    from geak_core.engine.recording import RecordedLLM
    from geak_core.engine.store import RunStore

    plugins = get_plugin_manager()
    steps.mark("plugins loaded")
    from geak_evaluator_triton import child_pool
    from geak_evaluator_triton.evaluator import TritonEvaluator

    steps.mark("the judge's modules imported")
    recipe = load_recipe(RECIPE, plugins)
    steps.mark("recipe loaded")
    for owner, attribute, name in (
            (agent, "prepare", "prepare"), (agent, "_suite_and_tasks", "prepare: suite and tasks"),
            (agent, "resolve_hardware", "prepare: hardware profile"),
            (agent, "environment_manifest", "manifest"), (RunStore, "create", "run folder"),
            (TritonEvaluator, "runtime", "judge runtime"), (TritonEvaluator, "evaluate", "first evaluation"),
            (RecordedLLM, "complete", "first LLM call")):
        steps.wrap(owner, attribute, name)
    instances: list[Any] = []
    original_init = child_pool.Children.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        instances.append(self)

    child_pool.Children.__init__ = init  # type: ignore[method-assign]
    child_pool.Children.instances = instances  # type: ignore[attr-defined]
    stop = threading.Event()
    threading.Thread(target=watch_spares, args=(steps, stop), daemon=True).start()
    verdicts: list[Any] = []

    def echo(line: str = "", **_: Any) -> None:
        if VERDICT.match(line) and not verdicts:
            verdicts.append(line)
            steps.mark("first verdict printed")

    with tempfile.TemporaryDirectory() as folder:
        recipe.run.output_dir = folder
        summary = agent.run_recipe(recipe, plugins, echo=echo)
        stop.set()
        first = phases_of_first_verdict(Path(folder) / summary.run_id)
    return {"load": load(), "marks": sorted(steps.marks), "first_verdict_phases": first}


def phases_of_first_verdict(run_dir: Path) -> dict[str, Any]:
    from geak_core.engine.store import RunStore

    with RunStore(run_dir) as store:
        for candidate_id, result in store.evaluations():
            return {"candidate": candidate_id, "wall_s": round(result.wall_s, 3), **result.phases}
    return {}


# ---------------------------------------------------------------------------
# 3. One child's start
# ---------------------------------------------------------------------------

CHILD = r'''
import json, sys, time
began = float(sys.argv[1])
marks = {"python": round(time.time() - began, 3)}
def mark(name, since=[time.time()]):
    now = time.time()
    marks[name] = round(now - since[0], 3)
    since[0] = now
import torch; mark("torch")
import triton, triton.language; mark("triton")
import geak_evaluator_triton.warm; mark("the judge's preloads (warm.py)")
print(json.dumps(marks))
'''


def child_start() -> dict[str, Any]:
    began = time.time()
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", CHILD, repr(began)], capture_output=True, text=True, env=env,
                          timeout=600)
    row: dict[str, Any] = {"wall_s": round(time.time() - began, 3), "load": load()}
    if proc.returncode == 0:
        row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    else:
        row["error"] = proc.stderr[-2000:]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-steps", dest="steps", action="store_false")
    parser.add_argument("--json", dest="json_out", default="")
    args = parser.parse_args(argv)
    os.environ.pop("TRITON_INTERPRET", None)  # as the README's command runs: the judge decides the mode
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count()}
    if args.steps:  # first: this process's imports are part of what it times
        result["steps"] = steps_run()
    result["child"] = child_start()
    result["command"] = command(args.repeats)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))
    report(result)
    return 0


def report(result: dict[str, Any]) -> None:
    print(f"{result['date']}, {result['cores']} cores")
    if "steps" in result:
        steps = result["steps"]
        print(f"\nsteps of one run in this process (seconds since it began; load {steps['load']}):")
        for at, name in steps["marks"]:
            print(f"  {at:7.2f}  {name}")
        print("  the first verdict's phases, as the judge recorded them (seconds):")
        for name, value in steps["first_verdict_phases"].items():
            print(f"    {name}: {value}")
    child = result["child"]
    print(f"\none child's start (seconds; load {child['load']}): "
          + ", ".join(f"{k} {v}" for k, v in child.items() if k != "load"))
    command_result = result["command"]
    print("\n`geak-core run recipes/quickstart.toml` (seconds from its start):")
    for row in command_result["runs"]:
        print(f"  run line {row.get('run_line_s')}, first verdict {row.get('first_verdict_s')}, "
              f"whole run {row['total_s']}{'' if row['ok'] else ' (FAILED)'}; load {row['load']}")
    print(f"  first verdict: min {command_result['first_verdict_min_s']}, "
          f"median {command_result['first_verdict_median_s']}")


if __name__ == "__main__":
    sys.exit(main())
