"""How long `geak-core run` takes to stop after Ctrl-C: runs a recipe (default the quickstart),
sends SIGINT once the first verdict line is printed, and reports the seconds from the signal
to the process's exit and its exit status (130 expected). The run folder goes to a temporary
directory.

    python bench/ctrl_c.py [--recipe recipes/quickstart.toml] [--after "generate ->"] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def once(recipe: str, after: str) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.Popen([sys.executable, "-m", "geak_core.cli", "run", recipe, "--output-dir", out],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            if after in line:
                break
        time.sleep(0.5)  # the next rounds under way
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=300)
        return time.monotonic() - sent, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=str(ROOT / "recipes" / "quickstart.toml"))
    parser.add_argument("--after", default="generate ->", help="send SIGINT after the first line holding this")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seconds = []
    for index in range(args.rounds):
        took, status = once(args.recipe, args.after)
        seconds.append(took)
        print(f"round {index + 1}: exit {status} {took:.2f} s after SIGINT", flush=True)
    print(f"median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s over {len(seconds)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
