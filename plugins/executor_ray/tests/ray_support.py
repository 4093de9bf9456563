"""What the ray executor's tests compare, and how they start runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "recipes" / "quickstart.toml"


def reason_class(reason: str | None) -> str:
    """What a reason says, without its numbers (seeds, counts, errors): the stage and case it
    names, or the first words of a rejection."""
    return re.sub(r"\d+(\.\d+)?", "#", (reason or "").split(":")[0])


def verdict_class(result) -> tuple:
    """The deterministic part of a verdict: wherever it is judged, a candidate gets this."""
    return (result.call_ok, result.correct, result.failed_stage, tuple(sorted(result.flags)),
            reason_class(result.reason))


def run_verdicts(run_dir: Path) -> dict[str, tuple]:
    """Each candidate's latest verdict class in a stored run."""
    from geak_core.engine.store import RunStore

    with RunStore(run_dir) as store:
        return {candidate_id: verdict_class(result) for candidate_id, result in store.evaluations()}


def only_run(output_dir: Path) -> Path:
    (run_dir,) = [p for p in output_dir.iterdir() if p.is_dir()]
    return run_dir


def cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    return subprocess.run([sys.executable, "-m", "geak_core.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def ray_recipe(folder: Path, address: str, *, base: Path = QUICKSTART, run: str = "",
               executor: str = "", evaluator: str = "workers = 1") -> Path:
    """A recipe that is ``base`` with its judgements on the cluster at ``address``."""
    path = folder / "recipe.toml"
    path.write_text(textwrap.dedent(f"""\
        include = "{base}"

        [run]
        output_dir = "{folder / 'runs'}"
        {run}

        [evaluator]
        name = "triton"
        {evaluator}

        [executor]
        name = "ray"
        address = "{address}"
        judges = 2
        {executor}
        """))
    return path
