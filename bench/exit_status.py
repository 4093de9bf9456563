"""Whether `geak-core eval` ends with the status it decided, run after run: judges a folder of
candidates ``--runs`` times (20 by default), each a fresh process with stdout a pipe, and
reports each run's exit status, whether its stdout ended with its ``wrote N records`` line,
whether its -o/--out file held every record, and the last lines of its stderr where the
status was not 0 or 1 (a ``terminate called without an active exception`` abort is 134).

    python bench/exit_status.py candidates/ --suite rocm [--runs 20] [--json exit.json] [-- --workers 1]

Arguments after ``--`` go to `geak-core eval` as they are.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any


def once(folder: str, suite: str, extra: list[str], timeout_s: float) -> dict[str, Any]:
    """One `geak-core eval` over ``folder``: its status, seconds and whether its outputs are whole."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout block-buffered, as piped
    with tempfile.TemporaryDirectory(prefix="geak-exit-") as scratch:
        out = os.path.join(scratch, "verdicts.jsonl")
        command = [sys.executable, "-m", "geak_core.cli", "eval", "--suite", suite, folder, "-o", out, *extra]
        began = time.monotonic()
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return {"status": None, "wall_s": round(time.monotonic() - began, 1), "note": "timed out"}
        wall = time.monotonic() - began
        lines = proc.stdout.splitlines()
        last = lines[-1] if lines else ""
        records = 0
        if os.path.exists(out):
            with open(out, encoding="utf-8") as handle:
                records = sum(1 for line in handle if line.strip())
    said = last.split()[1] if last.startswith("wrote ") else None
    return {
        "status": proc.returncode,
        "wall_s": round(wall, 1),
        "stdout_whole": said is not None and said.isdigit(),
        "records_whole": said is not None and said.isdigit() and int(said) == records,
        "records": records,
        "stderr_tail": proc.stderr.strip().splitlines()[-3:] if proc.returncode not in (0, 1) else [],
    }


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="candidate files named <task>.py or <task>__x.py")
    parser.add_argument("--suite", default="rocm")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run at most")
    parser.add_argument("--json", dest="json_path", help="write every run's row here")
    args = parser.parse_args(argv)
    rows = []
    for index in range(args.runs):
        row = once(args.folder, args.suite, extra, args.timeout)
        rows.append(row)
        print(f"run {index + 1}/{args.runs}: status {row['status']}  {row['wall_s']} s  "
              f"stdout whole {row.get('stdout_whole')}  records whole {row.get('records_whole')} "
              f"({row.get('records', 0)})" + "".join(f"\n    {line}" for line in row.get("stderr_tail", [])),
              flush=True)
    counts = collections.Counter(row["status"] for row in rows)
    print("exit statuses: " + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items(), key=str)))
    whole = sum(bool(row.get("stdout_whole") and row.get("records_whole")) for row in rows)
    print(f"outputs whole in {whole} of {len(rows)} runs")
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as handle:
            json.dump({"folder": args.folder, "suite": args.suite, "extra": extra, "runs": rows}, handle, indent=2)
    return 0 if set(counts) <= {0, 1} and whole == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
